"""cerar.drift's DriftControl schedule in one process: when it probes, when it re-synchronises and
which tensors it re-synchronises, against a scripted probe and a communicator that records what
it all-reduces (no ranks needed); and DriftProbe's figures on ranks that are threads of this
process (package_test.py's run_ranks), against the drift computed directly. Run by ctest
(tests/python)."""
import math
import os
import sys
import unittest

import torch

import cerar
import cerar.drift

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from package_test import run_ranks  # noqa: E402


class RecordingComm:
    """One rank: an all-reduce leaves the data as it is and records its length."""
    size, rank = 1, 0

    def __init__(self):
        self.reduced = []

    def allreduce(self, tensor, design, average=False):
        self.reduced.append(tensor.numel())


class ScriptedProbe:
    """Returns DriftEstimates whose per-tensor peaks come from `peaks(step)`."""

    def __init__(self, control, names, peaks):
        self.control, self.names, self.peaks = control, names, peaks
        self.steps = []

    def probe(self):
        step = self.control.step
        self.steps.append(step)
        peaks = self.peaks(step)
        return cerar.drift.DriftEstimate(self.names, [0.0] * len(peaks), [0.0] * len(peaks),
                                         peaks, max(peaks))


def make(peaks, tau=5e-3, start_after=0, probe_every=10, iterator=False, resync_every=None):
    """A control over a 4 x 3 + 3 x 2 model (4 tensors: 12, 3, 6, 2 elements), given as the
    module or, with iterator=True, as model.parameters()."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    comm = RecordingComm()
    control = cerar.drift.DriftControl(comm, model.parameters() if iterator else model, None,
                                       probe_every=probe_every, resync_above=tau,
                                       start_after=start_after, resync_every=resync_every)
    names = [n for n, _ in control.named]
    control.probe_ = ScriptedProbe(control, names, peaks)
    return control, comm, model


class DriftControlSchedule(unittest.TestCase):
    def test_no_probe_in_the_warmup_then_gaps_double_up_to_probe_every(self):
        control, comm, _ = make(lambda step: [0.0] * 4, start_after=5)
        for _ in range(60):
            control.after_step()
        # 6, then gaps 1, 2, 4, 8, 10, 10, ...
        self.assertEqual(control.probe_.steps, [6, 7, 9, 13, 21, 31, 41, 51])
        self.assertEqual(control.resyncs, 0)
        self.assertEqual(comm.reduced, [])

    def test_the_gap_shrinks_to_what_the_growth_leaves_before_tau(self):
        # The drift is quiet, then rises by 1e-3 per step from step 12 on.
        control, comm, _ = make(lambda step: [0.0, max(step - 11, 0) * 1e-3, 0.0, 0.0])
        resync_steps = []
        for _ in range(30):
            if control.after_step():
                resync_steps.append(control.step)
        probes = control.probe_.steps
        # Probes at 1, 2, 4, 8; step 16 sees 5e-3 after a rise of 5e-3 (growth taken as if it
        # all came in the last step) and re-syncs; without the growth rule the gap would be 10.
        self.assertEqual(probes[:5], [1, 2, 4, 8, 16])
        self.assertEqual(resync_steps[0], 16)
        # After it, the growth (5e-3, decaying by 0.9 per probe) keeps the gap at 1.
        self.assertEqual(probes[5:8], [17, 18, 19])
        # The scripted peak never falls (the script ignores re-syncs), so with a growth of 1e-3
        # per step the control re-syncs whenever peak + growth > tau.
        self.assertGreater(control.resyncs, 1)

    def test_a_resync_moves_only_the_tensors_that_drift(self):
        # Tensor 0 (4 x 3 weight) drifts past tau; tensor 2 (3 x 2 weight) sits at tau / 4.
        control, comm, model = make(lambda step: [6e-3, 0.0, 1.25e-3, 0.0])
        self.assertTrue(control.after_step())
        self.assertEqual(comm.reduced, [12])  # the first weight alone (no optimiser state)
        self.assertAlmostEqual(control._last_peak, 1.25e-3)

    def test_resync_every_and_probes_together(self):
        # A periodic re-sync every 2 steps and probes at gaps 1, 2, 3, 3, ... (steps 1, 2, 4, 7,
        # 10, ...); tensor 0's peak rises by 1e-5 per step (far below tau, so no probe re-syncs).
        # On a step where both fire, the probe sees what the re-sync left: it must not take the
        # fall as growth, nor re-sync again, and it leaves the peak at 0.
        control, comm, _ = make(lambda step: [step * 1e-5, 0.0, 0.0, 0.0], probe_every=3,
                                resync_every=2)
        seen = {}
        for _ in range(20):
            before = control.growth
            control.after_step()
            seen[control.step] = (before, control.growth, control._last_peak)
        probes = [step for step, _, _ in control.history]
        self.assertEqual(probes, [1, 2, 4, 7, 10, 13, 16, 19])
        for step, _, resynced in control.history:
            before, after, last_peak = seen[step]
            if step % 2 == 0:  # both
                self.assertTrue(resynced, step)
                self.assertEqual(after, before, step)
                self.assertEqual(last_peak, 0.0, step)
            else:
                self.assertFalse(resynced, step)
                self.assertEqual(last_peak, step * 1e-5, step)
        self.assertEqual(control.resyncs, 10)
        self.assertEqual(comm.reduced, [23] * 10)  # every tensor, one float32 group, each once

    def test_an_iterator_of_parameters_is_resynced_every_time(self):
        # model.parameters() was enumerated again at each re-sync: the second one found nothing,
        # all-reduced nothing, and still counted (and reported) a re-sync.
        model = torch.nn.Linear(4, 3)
        comm = RecordingComm()
        control = cerar.drift.DriftControl(comm, model.parameters(), None, probe_every=None,
                                           resync_every=1)
        for _ in range(3):
            self.assertTrue(control.after_step())
        self.assertEqual(comm.reduced, [15, 15, 15])
        self.assertEqual(control.resyncs, 3)

    def test_an_iterator_of_parameters_is_probed_and_resynced(self):
        # With probes on, the probe consumed the iterator in __init__, so no re-sync moved
        # anything. Tensor 0 (param0, the 4 x 3 weight) drifts past tau at every probe.
        control, comm, _ = make(lambda step: [6e-3, 0.0, 1.25e-3, 0.0], iterator=True)
        self.assertEqual([n for n, _ in control.named], ["param0", "param1", "param2", "param3"])
        for _ in range(3):
            self.assertTrue(control.after_step())
        self.assertEqual(comm.reduced, [12, 12, 12])

    def test_resync_refuses_nothing_to_synchronise(self):
        model = torch.nn.Linear(4, 3)
        params = model.parameters()
        self.assertEqual(cerar.drift.resync(RecordingComm(), params), 15)
        with self.assertRaisesRegex(ValueError, r"resync: no parameters .*an iterator such as "
                                    r"model.parameters\(\) is empty once consumed"):
            cerar.drift.resync(RecordingComm(), params)
        comm = RecordingComm()
        with self.assertRaisesRegex(ValueError, r"resync: none of the names \['bias2'\] is a "
                                    r"parameter's \(they are \['weight', 'bias'\]\)"):
            cerar.drift.resync(comm, model, names={"bias2"})
        self.assertEqual(comm.reduced, [])
        self.assertEqual(cerar.drift.resync(comm, model, names={"bias"}), 3)
        with self.assertRaisesRegex(ValueError, "DriftControl: no parameters"):
            cerar.drift.DriftControl(comm, iter([]), None)
        model.requires_grad_(False)
        with self.assertRaisesRegex(ValueError, "DriftControl: the module has no trainable"):
            cerar.drift.DriftControl(comm, model, None)

    def test_resync_above_inf_probes_only(self):
        # int(inf) raised OverflowError at the first probe that saw a growth.
        control, comm, _ = make(lambda step: [step * 1e-3, 0.0, 0.0, 0.0], tau=float("inf"))
        for _ in range(40):
            self.assertFalse(control.after_step())
        self.assertEqual(control.probe_.steps, [1, 2, 4, 8, 16, 26, 36])
        self.assertGreater(control.growth, 0)
        self.assertEqual((control.resyncs, comm.reduced), (0, []))

    def test_a_non_finite_peak_names_the_tensors(self):
        # NaN parameters made the peak NaN, and int(nan) raised ValueError in the scheduler.
        for bad in (float("nan"), float("inf")):
            control, comm, _ = make(lambda step: [1e-3, bad, 0.0, 0.0] if step > 1 else
                                    [0.0] * 4)
            control.after_step()
            with self.assertRaisesRegex(cerar.NumericalError,
                                        r"drift probe at step 2: parameters are non-finite "
                                        r"\(NaN or inf\) on some rank in 0.bias; training has "
                                        r"diverged"):
                control.after_step()
            self.assertEqual(comm.reduced, [])

    def test_bad_options_are_refused_with_the_value(self):
        model = torch.nn.Linear(2, 2)
        for kwargs, text in [({"probe_every": 0}, "probe_every = 0"),
                             ({"resync_above": 0.0}, "resync_above = 0.0"),
                             ({"start_after": -1}, "start_after = -1"),
                             ({"probe_every": None, "resync_above": 1e-3}, "needs probe_every")]:
            with self.assertRaisesRegex(ValueError, text):
                cerar.drift.DriftControl(RecordingComm(), model, None, **kwargs)


def drifted(rank, n_ranks=4):
    """Rank `rank`'s parameters: a shared base plus known per-rank differences. small (3 x 4,
    measured exactly): 1e-3 noise; heavy (10 000): 1e-7 noise and +1e-2 at coordinate 1234 on
    rank 1 alone (a heavy hitter); dense (5 000): 1e-3 noise everywhere."""
    base = torch.Generator().manual_seed(11)
    mine = torch.Generator().manual_seed(100 + rank)
    small = torch.randn(3, 4, generator=base, dtype=torch.float64)
    heavy = torch.randn(10000, generator=base, dtype=torch.float64)
    dense = torch.randn(50, 100, generator=base, dtype=torch.float64)
    small += 1e-3 * torch.randn(3, 4, generator=mine, dtype=torch.float64)
    heavy += 1e-7 * torch.randn(10000, generator=mine, dtype=torch.float64)
    dense += 1e-3 * torch.randn(50, 100, generator=mine, dtype=torch.float64)
    if rank == 1:
        heavy[1234] += 1e-2
    return [("small", small), ("heavy", heavy), ("dense", dense)]


class DriftProbeOnRanks(unittest.TestCase):
    N = 4

    def test_probe_measures_the_known_differences(self):
        # Nothing checked the probe's numbers: a probe that always returned 0 passed every test.
        params = [drifted(r) for r in range(self.N)]
        copies = [[(n, p.clone()) for n, p in named] for named in params]
        out, _ = run_ranks(self.N, lambda comm: cerar.drift.DriftProbe(
            comm, params[comm.rank]).probe())
        for named, copy in zip(params, copies):  # the probe never moves a parameter
            for (_, p), (_, q) in zip(named, copy):
                self.assertTrue(torch.equal(p, q))
        truth = {}
        for t, name in enumerate(("small", "heavy", "dense")):
            stack = torch.stack([params[r][t][1].reshape(-1) for r in range(self.N)])
            dev = stack - stack.mean(dim=0)
            truth[name] = (float(dev.pow(2).mean(dim=1).sqrt().max()), float(dev.abs().max()))
        self.assertAlmostEqual(truth["heavy"][1], 7.5e-3, delta=1e-6)  # 1e-2 - 1e-2 / 4
        for rank, (estimate, error) in enumerate(out):
            self.assertIsNone(error, error)
            got = dict(zip(estimate.names, zip(estimate.per_tensor, estimate.peaks)))
            # At most K elements: one bucket per coordinate, exact.
            self.assertAlmostEqual(got["small"][0] / truth["small"][0], 1, delta=1e-9)
            self.assertAlmostEqual(got["small"][1] / truth["small"][1], 1, delta=1e-9)
            # The heavy hitter dominates its bucket: peak within 10 %.
            self.assertAlmostEqual(got["heavy"][1] / truth["heavy"][1], 1, delta=0.1)
            # Dense drift: the RMS within 3 times the estimate's spread sqrt(2 / K).
            self.assertAlmostEqual(got["dense"][0] / truth["dense"][0], 1,
                                   delta=3 * math.sqrt(2 / 64))
            self.assertEqual((estimate.peaks, estimate.per_tensor),
                             (out[0][0].peaks, out[0][0].per_tensor))  # every rank the same

    def test_non_finite_parameters_raise_on_every_rank(self):
        def body(comm):
            params = drifted(comm.rank)
            if comm.rank == 2:
                params[1][1][5] = float("nan")
            control = cerar.drift.DriftControl(comm, params, None, probe_every=1,
                                               resync_above=5e-3)
            control.after_step()

        out, _ = run_ranks(self.N, body)
        for rank, (_, error) in enumerate(out):
            self.assertIsInstance(error, cerar.NumericalError, "rank %d: %r" % (rank, error))
            self.assertIn("non-finite (NaN or inf) on some rank in heavy;", str(error))

    def test_probe_keeps_two_bytes_per_element_and_the_same_sketch(self):
        # It kept an int64 hash and a float64 sign (16 B per parameter element). The draws are
        # the same as then (docs/training.md's runs probed with them), only stored in 1 byte
        # each, and sketching in chunks adds each bucket's elements in the same order.
        params = [("a", torch.randn(3000)), ("b", torch.randn(7, 11)), ("c", torch.randn(40))]
        probe = cerar.drift.DriftProbe(RecordingComm(), params)
        gen = torch.Generator().manual_seed(0x5EED)
        for t, (_, p) in enumerate(params):
            n = p.numel()
            self.assertLessEqual(probe._hash[t].element_size() + probe._sign[t].element_size(),
                                 2)
            if n <= 64:
                self.assertTrue(torch.equal(probe._hash[t].long(), torch.arange(n)))
                self.assertTrue(bool((probe._sign[t] == 1).all()))
                continue
            hash_then = torch.randint(0, 64, (n,), generator=gen)
            sign_then = torch.randint(0, 2, (n,), generator=gen).to(torch.float64) * 2 - 1
            self.assertTrue(torch.equal(probe._hash[t].long(), hash_then), t)
            self.assertTrue(torch.equal(probe._sign[t].double(), sign_then), t)

        def figures(chunk):
            def body(comm):
                return cerar.drift.DriftProbe(comm, drifted(comm.rank)).probe()
            saved, cerar.drift._CHUNK = cerar.drift._CHUNK, chunk
            try:
                out, _ = run_ranks(2, body)
            finally:
                cerar.drift._CHUNK = saved
            self.assertIsNone(out[0][1], out[0][1])
            return out[0][0].peaks, out[0][0].per_tensor

        self.assertEqual(figures(333), figures(1 << 30))


if __name__ == "__main__":
    unittest.main(verbosity=2)
