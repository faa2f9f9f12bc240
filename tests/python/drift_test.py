"""cerar.drift's DriftControl schedule in one process: when it probes, when it re-synchronises and
which tensors it re-synchronises, against a scripted probe and a communicator that records what
it all-reduces (no ranks needed). Run by ctest (tests/python)."""
import unittest

import torch

import cerar.drift


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


def make(peaks, tau=5e-3, start_after=0, probe_every=10):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    comm = RecordingComm()
    control = cerar.drift.DriftControl(comm, model, None, probe_every=probe_every,
                                       resync_above=tau, start_after=start_after)
    names = [n for n, _ in model.named_parameters()]
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
        model = torch.nn.Linear(4, 3)
        comm = RecordingComm()
        control = cerar.drift.DriftControl(comm, model, None, probe_every=None, resync_every=3)
        for _ in range(9):
            control.after_step()
        self.assertEqual(control.resyncs, 3)
        self.assertEqual(comm.reduced, [15, 15, 15])  # weight and bias, one float32 group

    def test_bad_options_are_refused_with_the_value(self):
        model = torch.nn.Linear(2, 2)
        for kwargs, text in [({"probe_every": 0}, "probe_every = 0"),
                             ({"resync_above": 0.0}, "resync_above = 0.0"),
                             ({"start_after": -1}, "start_after = -1"),
                             ({"probe_every": None, "resync_above": 1e-3}, "needs probe_every")]:
            with self.assertRaisesRegex(ValueError, text):
                cerar.drift.DriftControl(RecordingComm(), model, None, **kwargs)


if __name__ == "__main__":
    unittest.main(verbosity=2)
