"""The cerar package in one process, no MPI: designs (load, pick, make, figures, provenance,
errors) and the communicator over a Python transport whose N ranks are threads of this process
(the same C++ path the torch.distributed transport takes). Run by ctest (tests/python)."""
import ctypes
import json
import os
import queue
import sys
import tempfile
import threading
import unittest

import numpy as np

import cerar
from cerar import _cerar
from cerar.comm import Communicator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MATRICES = os.path.join(ROOT, "matrices")


class ThreadRing:
    """N ranks as threads: rank r's messages to r+1 go through queue r+1, in order."""

    def __init__(self, size, timeout=20):
        self.size = size
        self.timeout = timeout
        self.queues = [queue.Queue() for _ in range(size)]
        self.barrier = threading.Barrier(size)
        self.values = [None] * size


class ThreadTransport:
    """The Python transport protocol of cerar._cerar (python/src/python_transport.h)."""

    def __init__(self, ring, rank, fail_wait=False):
        self.ring, self.rank, self.fail_wait = ring, rank, fail_wait

    def start(self, send, recv, nbytes):
        self.ring.queues[(self.rank + 1) % self.ring.size].put(ctypes.string_at(send, nbytes))
        return recv, nbytes

    def wait(self, token):
        if self.fail_wait:
            raise ConnectionError("link to rank %d cut" % ((self.rank - 1) % self.ring.size))
        recv, nbytes = token
        data = self.ring.queues[self.rank].get(timeout=self.ring.timeout)
        ctypes.memmove(recv, data, nbytes)

    def check_agreement(self, what, value):
        self.ring.values[self.rank] = value
        self.ring.barrier.wait(timeout=self.ring.timeout)
        values = list(self.ring.values)
        self.ring.barrier.wait(timeout=self.ring.timeout)
        for r, v in enumerate(values):
            if v != values[0]:
                raise RuntimeError("ranks disagree on %s: rank 0 has %d, rank %d has %d"
                                   % (what, values[0], r, v))


def run_ranks(size, body, fail_rank=None, timeout=20, check_every_call=False):
    """body(comm) on `size` threads; returns per-rank (result, exception)."""
    ring = ThreadRing(size, timeout)
    comms = [Communicator(_cerar._python_communicator(
        ThreadTransport(ring, r, fail_wait=(r == fail_rank)), r, size, 1 << 12,
        check_every_call), "test") for r in range(size)]
    out = [None] * size

    def target(r):
        try:
            out[r] = (body(comms[r]), None)
        except Exception as e:  # noqa: BLE001
            out[r] = (None, e)

    threads = [threading.Thread(target=target, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out, comms


class DesignTest(unittest.TestCase):
    def test_load_design_figures_and_provenance(self):
        d = cerar.load_design(os.path.join(MATRICES, "eps_N4_c8.json"))
        with open(os.path.join(MATRICES, "eps_N4_c8.json")) as f:
            doc = json.load(f)
        self.assertEqual((d.N, d.c, d.L), (4, 8, 10))
        self.assertEqual(d.figures["err_rms"], doc["figures"]["err_rms"])
        self.assertEqual(d.figures["predicted_error"], doc["figures"]["predicted_error"])
        self.assertEqual(d.provenance["parameters"], doc["provenance"]["parameters"])
        self.assertEqual(d.provenance["construction"], "eps")
        self.assertAlmostEqual(d.traffic_ratio(), (10 / 8) / (2 * 3 / 4))
        np.testing.assert_array_equal(d.encoder(2), np.array(doc["encoders"][2]))
        self.assertFalse(d.exact)
        self.assertTrue(cerar.load_design(os.path.join(MATRICES, "eps_N4_c4.json")).exact)

    def test_pick_design_takes_the_smallest_predicted_error(self):
        import glob
        for n, c in [(4, 8), (4, 12), (8, 16), (3, 3)]:
            d = cerar.pick_design(n, c, "float32")
            self.assertEqual((d.N, d.c), (n, c))
            best = float("inf")
            for path in glob.glob(os.path.join(MATRICES, "*_N%d_c%d.json" % (n, c))):
                with open(path) as f:
                    best = min(best, json.load(f)["figures"]["predicted_error"]["float32"])
            self.assertEqual(d.predicted_error("float32"), best)

    def test_pick_design_without_a_match_names_what_exists(self):
        with self.assertRaisesRegex(cerar.InvalidArgument, r"N = 5, c = 7.*\(4, 8\)"):
            cerar.pick_design(5, 7)
        with self.assertRaisesRegex(ValueError, "float16"):
            cerar.pick_design(4, 8, "float16")

    def test_pick_design_refuses_when_no_file_has_the_figure(self):
        # Without the toolkit and without a file that records the figure, pick_design ranked the
        # files by their float32 figure (or took the first file) without a word, though its
        # docstring said such files are not considered and that it raises.
        import unittest.mock
        import cerar.ddp
        with unittest.mock.patch.object(_cerar, "_with_toolkit", False):
            with self.assertRaisesRegex(cerar.InvalidArgument,
                                        r"no catalogue design for N = 2, c = 4 has a predicted "
                                        r"float32\+state64 error \(eps_N2_c4.json\), and this "
                                        r"build has no toolkit"):
                cerar.pick_design(2, 4, "float32+state64")
            comm = Communicator(_cerar._python_communicator(ThreadTransport(ThreadRing(2), 0), 0,
                                                            2, 4096), "test")
            # The hook's c= passes pick_design's reason on (not make_design's "needs the
            # toolkit").
            with self.assertRaisesRegex(cerar.InvalidArgument, "float32\\+state64 error"):
                cerar.ddp.CerarHookState(comm, c=4, accumulation="f64-state")
            self.assertEqual(cerar.pick_design(2, 4, "float64").c, 4)  # files with the figure

    def test_make_design_tunes_for_the_dtype(self):
        if not _cerar._with_toolkit:
            self.skipTest("built without the toolkit")
        d = cerar.make_design(4, 8, "float32")
        ref = cerar.load_design(os.path.join(MATRICES, "eps_N4_c8.json"))  # made the same way
        self.assertEqual(d.provenance["parameters"]["eps"], ref.provenance["parameters"]["eps"])
        self.assertEqual(d.fingerprint, ref.fingerprint)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.json")
            d.save(path)
            self.assertEqual(cerar.load_design(path).fingerprint, d.fingerprint)
        e = cerar.make_design(4, 8, eps=0.01)
        self.assertEqual(e.provenance["parameters"]["eps"], 0.01)
        for bad in (float("nan"), -0.5):  # a negative eps once meant "tune" and was ignored
            with self.assertRaisesRegex(cerar.InvalidArgument, "eps = "):
                cerar.make_design(4, 8, eps=bad)

    @unittest.skipUnless(_cerar._with_toolkit, "make_design needs the toolkit")
    def test_make_design_takes_the_digit_limit_its_advice_names(self):
        # The toolkit's advice for a design too ill-conditioned for the ladder named only the
        # CLI's --max-digits, which make_design did not take.
        with self.assertRaisesRegex(cerar.NumericalError,
                                    r"too ill-conditioned for 100 digits.*raise the digit limit "
                                    r"to 200 \(cerar --max-digits, Python max_digits\)"):
            cerar.make_design(4, 24, construction="vandermonde", eps=1e-2, max_digits=100)
        for bad, words in ((10, "max digits 10: expected 50 ... 10000"),
                           ("200", "max_digits = '200', expected an integer")):
            with self.assertRaisesRegex(cerar.InvalidArgument, words):
                cerar.make_design(4, 8, eps=0.01, max_digits=bad)
        self.assertEqual(cerar.make_design(4, 8, eps=0.01, max_digits=50).fingerprint,
                         cerar.make_design(4, 8, eps=0.01).fingerprint)

    @unittest.skipUnless(_cerar._with_toolkit, "make_design needs the toolkit")
    def test_make_design_estimates_its_cost_first(self):
        # The CLI's cost model (docs/hardening.md): make_design(4096, 1) took hours in silence.
        import unittest.mock
        seconds, bytes_ = _cerar._make_design_cost(4096, 1, True, "auto")
        self.assertGreater(seconds, 3600)
        self.assertGreater(bytes_, 0)
        small = cerar.pick_design(4, 8)._native
        with unittest.mock.patch.object(_cerar, "_make_design", return_value=small) as made:
            with self.assertWarnsRegex(UserWarning,
                                       r"make_design\(N=4096, c=1\) is estimated to take about "
                                       r"[0-9.]+ h and [0-9.]+ GB"):
                cerar.make_design(4096, 1)
            self.assertEqual(made.call_count, 1)  # a warning, then the work
            with unittest.mock.patch.object(_cerar, "_available_memory_bytes", return_value=1e6):
                with self.assertRaisesRegex(cerar.InvalidArgument,
                                            r"make_design\(N=8, c=16\) needs about [0-9.]+ GB "
                                            r"of memory .*more than the 0.001 GB"):
                    cerar.make_design(8, 16)
            self.assertEqual(made.call_count, 1)  # refused before any work

    @unittest.skipUnless(_cerar._with_toolkit, "make_design needs the toolkit")
    def test_make_design_names_arguments_of_the_wrong_type(self):
        # pybind11's generic "incompatible function arguments" TypeError before; a string eps
        # was read by float().
        for kwargs, words in (({"precision": None}, "precision = None, expected a name"),
                              ({"construction": 3}, "construction = 3, expected a name"),
                              ({"eps": "0.1"}, "eps = '0.1', expected a number"),
                              ({"eps": True}, "eps = True, expected a number")):
            with self.assertRaisesRegex(cerar.InvalidArgument, words):
                cerar.make_design(4, 8, **kwargs)
        self.assertEqual(cerar.make_design(4, 8, eps=np.float64(1e-2)).N, 4)

    def test_counts_are_integers_never_truncated(self):
        # int(8.7) would give 8 without a word: the package refuses it, and takes numpy's ints.
        with self.assertRaisesRegex(cerar.InvalidArgument, r"c = 8\.7, expected an integer"):
            cerar.pick_design(4, 8.7)
        with self.assertRaisesRegex(cerar.InvalidArgument, r"N = True, expected an integer"):
            cerar.pick_design(True, 8)
        self.assertEqual(cerar.pick_design(np.int64(4), np.int32(8)).c, 8)
        if _cerar._with_toolkit:
            with self.assertRaisesRegex(cerar.InvalidArgument, r"N = 4\.0, expected an integer"):
                cerar.make_design(4.0, 8)
            # Beyond a C int, pybind11 would raise its generic "incompatible function arguments".
            with self.assertRaisesRegex(cerar.InvalidArgument,
                                        r"c = 2147483648, out of range: a C int holds"):
                cerar.make_design(4, 2**31)
            with self.assertRaisesRegex(cerar.InvalidArgument, r"N = -2147483649, out of range"):
                cerar.make_design(-2**31 - 1, 8)
        from cerar import comm
        with self.assertRaisesRegex(cerar.InvalidArgument,
                                    r"segment_bytes = 18446744073709551616, out of range: a uint64"):
            comm._segment_bytes(2**64)
        self.assertEqual(comm._segment_bytes(2**64 - 1), 2**64 - 1)

    def test_catalogue_files_must_hold_what_their_names_say(self):
        import shutil
        import unittest.mock
        with tempfile.TemporaryDirectory() as tmp:
            # A first-folder file named for (4, 8) that holds (2, 2): once picked for (4, 8).
            shutil.copy(os.path.join(MATRICES, "eps_N2_c2.json"), os.path.join(tmp, "eps_N4_c8.json"))
            with unittest.mock.patch.dict(os.environ, {"CERAR_MATRICES": tmp}):
                with self.assertRaisesRegex(cerar.DesignError, r"eps_N4_c8.json holds a design "
                                            r"for N = 2, c = 2, but its name says N = 4, c = 8"):
                    cerar.pick_design(4, 8)
                with open(os.path.join(tmp, "eps_N4_c8.json"), "w") as f:
                    f.write('{"N": 4, "c": 8')  # truncated
                with self.assertRaisesRegex(cerar.DesignError, "eps_N4_c8.json: cannot read"):
                    cerar.catalogue()
                # A dangling link: os.path.getmtime ran outside the try, a bare
                # FileNotFoundError.
                os.remove(os.path.join(tmp, "eps_N4_c8.json"))
                os.symlink(os.path.join(tmp, "gone.json"), os.path.join(tmp, "eps_N4_c8.json"))
                with self.assertRaisesRegex(cerar.DesignError, r"catalogue file .*eps_N4_c8.json: "
                                            r"cannot read it \(FileNotFoundError"):
                    cerar.pick_design(4, 8)

    def test_bad_files_raise_typed_errors_naming_the_file(self):
        with self.assertRaisesRegex(cerar.IoError, "nonexistent.json"):
            cerar.load_design("/nonexistent.json")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "broken.json")
            with open(path, "w") as f:
                f.write('{"format": "cerar-design", "N": 3')
            with self.assertRaisesRegex(cerar.Error, "broken.json"):
                cerar.load_design(path)
            self.assertTrue(issubclass(cerar.DesignError, cerar.Error))

    def test_a_path_with_a_nul_byte_names_no_file(self):
        # The system calls stop at the NUL: 'd.json\0.bak' once wrote and read d.json.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "d.json")
            design = cerar.load_design(os.path.join(MATRICES, "eps_N4_c8.json"))
            with self.assertRaisesRegex(cerar.IoError, "NUL byte"):
                design.save(path + "\0.bak")
            self.assertEqual(os.listdir(tmp), [])
            design.save(path)
            with self.assertRaisesRegex(cerar.IoError, "NUL byte"):
                cerar.load_design(path + "\0.bak")


def window_formula(design, data, j):
    """Rank j's result by PROTOCOL.md §4 (windows W_ij, s_ij = (j - 1 - i) mod N), float64."""
    N, c = design.N, design.c
    count = data.shape[1]
    m = -(-count // c)
    padded = np.zeros((N, c * m))
    padded[:, :count] = data
    g = padded.reshape(N, c, m)
    out = g[j].copy()
    D = np.asarray(design.decoder(j))
    for i in range(N):
        if i == j:
            continue
        s = (j - 1 - i) % N
        W = np.asarray(design.encoder(i))[N - 2 - s:N - 2 - s + c, :]
        out += D @ W @ g[i]
    return out.reshape(-1)[:count]


class CommunicatorTest(unittest.TestCase):
    def test_a_failed_agreement_check_keeps_mpi_from_finalising(self):
        # A failed (or interrupted) check leaves its all-gather posted: MPI_Finalize at exit
        # could then wait for the peers, so it must be skipped, as after a failed all-reduce.
        import cerar.comm as comm_module

        class FailingNative:
            kind, failure = "fake", ""

            def check_agreement(self, what, value):
                self.failure = "rank 0: interrupted while waiting for the check of " + what
                raise KeyboardInterrupt

        before = comm_module._failed
        comm_module._failed = False
        try:
            with self.assertRaises(KeyboardInterrupt):
                Communicator(FailingNative(), "fake").check_agreement("x", 1)
            self.assertTrue(comm_module._failed)
        finally:
            comm_module._failed = before

    def test_coded_and_ring_allreduce_on_threads(self):
        n, count = 4, 1001
        design = cerar.load_design(os.path.join(MATRICES, "eps_N4_c8.json"))
        rng = np.random.default_rng(3)
        data = rng.standard_normal((n, count))
        exact = data.sum(axis=0)

        def body(comm):
            coded = data[comm.rank].copy()
            comm.allreduce(coded, design, average=False)
            ring = data[comm.rank].copy()
            comm.allreduce(ring, None, average=True)
            return coded, ring, comm.bytes_sent

        out, comms = run_ranks(n, body)
        for r in range(n):
            result, error = out[r]
            self.assertIsNone(error, error)
            coded, ring, sent = result
            # PROTOCOL.md §4, in numpy: S_hat_r = g_r + sum_{i != r} D_r W_ir g_i, column by
            # column of the c x m layout (zero padding). An upper bound of 3 err_rms passed
            # another design's sums, and any corruption of the exact edge ranks.
            np.testing.assert_allclose(coded, window_formula(design, data, r), rtol=0,
                                       atol=1e-12 * np.abs(exact).max())
            np.testing.assert_allclose(ring, exact / n, rtol=1e-12)
            m = -(-count // design.c)
            chunk = -(-count // n)
            self.assertEqual(sent, design.L * m * 8 + 2 * (n - 1) * chunk * 8)
        # The cache holds both objects until two end_steps in a row find them unused.
        self.assertEqual(sorted(e.algorithm for e in comms[0].cache_info()), ["coded", "ring"])
        for unused in range(3):
            self.assertEqual(len(comms[0].cache_info()), 2, unused)
            for c in comms:
                c.end_step()
        self.assertEqual(comms[0].cache_info(), [])
        self.assertEqual(comms[0].cache_bytes(), 0)

    def test_coded_allreduce_of_counts_below_c(self):
        # Counts 0, 1 and c - 1 through the Python layer: padding to one column, nothing sent
        # for an empty tensor.
        n = 4
        design = cerar.load_design(os.path.join(MATRICES, "eps_N4_c8.json"))
        for count in (0, 1, design.c - 1):
            data = np.random.default_rng(count).standard_normal((n, count))

            def body(comm):
                coded = data[comm.rank].copy()
                before = comm.bytes_sent
                comm.allreduce(coded, design, average=False)
                return coded, comm.bytes_sent - before

            out, _ = run_ranks(n, body)
            for r in range(n):
                result, error = out[r]
                self.assertIsNone(error, error)
                coded, sent = result
                self.assertEqual(coded.shape, (count,))
                np.testing.assert_allclose(coded, window_formula(design, data, r), rtol=0,
                                           atol=1e-12 * max(np.abs(data).sum(axis=0), default=0))
                self.assertEqual(sent, design.L * -(-count // design.c) * 8, (count, r))

    def test_cache_calls_from_another_thread_do_not_deadlock_a_running_allreduce(self):
        # cache_info, cache_bytes and end_step once waited for the communicator's lock holding
        # the GIL, while the all-reduce holding the lock waited for the GIL (Python transport).
        # (end_step is collective in effect, since it evicts: it is left to the ranks' loop.)
        stop = threading.Event()
        calls = [0]

        def body(comm):
            x = np.ones(1 << 14, np.float32)
            runs = 0
            if comm.rank == 0:
                def monitor():
                    while not stop.is_set():
                        comm.cache_info()
                        comm.cache_bytes()
                        calls[0] += 1
                watcher = threading.Thread(target=monitor, daemon=True)
                watcher.start()
            for _ in range(30):
                comm.allreduce(x)
                runs += 1
            if comm.rank == 0:
                stop.set()
                watcher.join(20)
                self.assertFalse(watcher.is_alive())
            return runs

        out, _ = run_ranks(2, body, timeout=10)
        for result, error in out:
            self.assertIsNone(error, error)
            self.assertEqual(result, 30)
        self.assertGreater(calls[0], 0)

    def test_accumulation_gives_each_arithmetic_its_predicted_error(self):
        # c = 3N: f64+feedback feeds the packets' rounding back (FeedsBackRounding). float32
        # inputs, exact sums in float64; each run's error against the error model's figure for
        # its arithmetic (docs/error-model.md), and the same bytes for all four.
        n, c = 4, 12
        design = cerar.load_design(os.path.join(MATRICES, "eps_N4_c12.json"))
        count = c * 8192
        data = np.random.default_rng(5).standard_normal((n, count)).astype(np.float32)
        exact = data.astype(np.float64).sum(axis=0)
        arithmetic = {"buffer": "float32", "f64": "float32+acc64",
                      "f64+feedback": "float32+acc64+feedback", "f64-state": "float32+state64"}
        if not _cerar._with_toolkit:
            self.skipTest("the mixed arithmetics' figures need the toolkit")

        def body(comm):
            out = {}
            for acc in arithmetic:
                before = comm.bytes_sent
                x = data[comm.rank].copy()
                comm.allreduce(x, design, average=False, accumulation=acc)
                out[acc] = (x.astype(np.float64), comm.bytes_sent - before)
            return out

        out, comms = run_ranks(n, body)
        measured = {}
        for acc, name in arithmetic.items():
            worst = 0.0
            for r in range(n):
                result, error = out[r]
                self.assertIsNone(error, error)
                x, sent = result[acc]
                self.assertEqual(sent, design.L * (count // c) * 4, acc)
                worst = max(worst, np.linalg.norm(x - exact) / np.linalg.norm(exact))
            predicted = _cerar._predicted_error(design._native, name)
            self.assertLess(abs(worst / predicted - 1), 0.1, "%s: measured %.4g, predicted %.4g"
                            % (acc, worst, predicted))
            measured[acc] = worst
        self.assertLess(measured["f64-state"], measured["f64"])
        self.assertLess(measured["f64"], measured["buffer"])
        # One cached object per accumulation, each named.
        self.assertEqual(sorted(e.accumulation for e in comms[0].cache_info()),
                         sorted(arithmetic))

    def test_hook_names_each_accumulations_arithmetic_as_the_runtime_does(self):
        import cerar.ddp
        self.assertEqual(cerar.ddp.ARITHMETIC,
                         {"buffer": "float32", "f64": "float32+acc64",
                          "f64+feedback": "float32+acc64+feedback", "f64-state": "float32+state64"})
        self.assertEqual(_cerar._model_arithmetic("float64", "f64-state"), "float64")
        with self.assertRaisesRegex(cerar.InvalidArgument, "accumulation 'f32'"):
            _cerar._model_arithmetic("float32", "f32")

    def test_accumulation_is_for_the_coded_allreduce_and_named_checked(self):
        import cerar.ddp
        ring = ThreadRing(4)
        comm = Communicator(_cerar._python_communicator(ThreadTransport(ring, 0), 0, 4, 4096),
                            "test")
        with self.assertRaisesRegex(cerar.InvalidArgument, "accumulation f64 without a design"):
            comm.allreduce(np.zeros(8, dtype=np.float32), None, accumulation="f64")
        with self.assertRaisesRegex(cerar.InvalidArgument, "accumulation 'f32'"):
            comm.allreduce(np.zeros(8, dtype=np.float32), cerar.pick_design(4, 8),
                           accumulation="f32")
        with self.assertRaisesRegex(ValueError, "accumulation 'f32', expected one of buffer"):
            cerar.ddp.CerarHookState(comm, c=8, accumulation="f32")
        state = cerar.ddp.CerarHookState(comm, c=12, accumulation="f64-state")
        self.assertEqual(state.accumulation, "f64-state")
        # c picks the catalogue's design for the accumulation's arithmetic: the one tuned for
        # float32+state64 (scripts/make-catalogue-optimized --tune float32+state64), whose figure
        # beats every other file's for (4, 12), the float32-tuned one evaluated by the toolkit.
        picked = cerar.pick_design(4, 12, "float32+state64")
        self.assertEqual(state.design.fingerprint, picked.fingerprint)
        self.assertEqual(os.path.basename(picked.path), "opt-state64_N4_c12.json")
        for name in ("opt_N4_c12.json", "eps_N4_c12.json"):
            other = cerar.load_design(os.path.join(MATRICES, name))
            self.assertLess(picked.predicted_error("float32+state64"),
                            other.predicted_error("float32+state64"), name)
        self.assertEqual(cerar.ddp.CerarHookState(comm, c=12).design.fingerprint,
                         cerar.pick_design(4, 12).fingerprint)

    def test_hook_state_survives_a_checkpoint_without_its_communicator(self):
        import pickle
        import cerar.ddp
        ring = ThreadRing(4)
        comm = Communicator(_cerar._python_communicator(ThreadTransport(ring, 0), 0, 4, 4096),
                            "test")
        state = cerar.ddp.CerarHookState(comm, c=8, warmup_steps=3, layout="flat")
        state.iter = 17
        copy = pickle.loads(pickle.dumps(state))
        self.assertIsNone(copy.comm)
        self.assertEqual(copy.design.fingerprint, cerar.pick_design(4, 8).fingerprint)
        self.assertEqual((copy.iter, copy.warmup_steps, copy.layout), (17, 3, "flat"))
        with self.assertRaisesRegex(ValueError, "N = 3 ranks"):
            cerar.ddp.CerarHookState(comm, cerar.pick_design(3, 6))
        for option in ({"c": 8.9}, {"c": 8, "warmup_steps": 2.5}, {"min_coded_numel": "9"}):
            with self.assertRaisesRegex(ValueError, "expected an integer"):
                cerar.ddp.CerarHookState(comm, **option)
        for option, words in (({"c": 0}, "c = 0, expected >= 1"),
                              ({"min_coded_numel": -5}, "min_coded_numel = -5, out of range"),
                              ({"exact_1d": "no"}, "exact_1d = 'no', expected True or False"),
                              ({"preserve_zeros": "False"}, "preserve_zeros = 'False'")):
            with self.assertRaisesRegex(ValueError, words):
                cerar.ddp.CerarHookState(comm, **option)
        # The restored state's hook says what to do (AttributeError from inside the hook before).

        class Bucket:
            def buffer(self):
                return torch.zeros(4)

            def gradients(self):
                return [torch.zeros(4)]

            def is_last(self):
                return True

        import torch
        future = cerar.ddp.cerar_hook(copy, Bucket())
        with self.assertRaisesRegex(Exception, "CerarHookState.comm is None"):
            future.wait()
        self.assertIsInstance(copy.last_error, ValueError)
        import cerar.drift
        with self.assertRaisesRegex(ValueError, "resync_above = 'x', expected a number"):
            cerar.drift.DriftControl(comm, [torch.zeros(3)], probe_every=1, resync_above="x")
        for bad in ("5", None, True, float("nan"), 0):
            with self.assertRaisesRegex(cerar.InvalidArgument, "timeout_s = "):
                cerar.torch_communicator(timeout_s=bad)
        with self.assertRaisesRegex(cerar.InvalidArgument, "expected >= 0.001 s"):
            cerar.torch_communicator(timeout_s=1e-9)
        for buckets in (0, -1, None, 1.5):
            with self.assertRaisesRegex(ValueError, "buckets = .*, expected an integer >= 1"):
                cerar.drift.DriftProbe(comm, [torch.zeros(3)], buckets=buckets)

    def test_ctrl_c_in_a_python_transport_reaches_the_caller(self):
        # KeyboardInterrupt in a Python transport's wait (torch_communicator: Ctrl-C, seen once
        # torch's wait returns) is raised again from allreduce, as the MPI transport's is
        # (recovery_test.py, interrupt); it was a TransportError. The communicator fails all
        # the same.
        class Interrupted(ThreadTransport):
            def check_agreement(self, what, value):
                pass  # one rank alone: building the ring object passes its check

            def wait(self, token):
                raise KeyboardInterrupt

        comm = Communicator(_cerar._python_communicator(Interrupted(ThreadRing(2), 0), 0, 2,
                                                        4096), "test")
        with self.assertRaises(KeyboardInterrupt):
            comm.allreduce(np.ones(8, dtype=np.float32))
        failure = "rank 0: python transport wait failed: KeyboardInterrupt"
        self.assertEqual(comm.failure, failure)
        with self.assertRaisesRegex(cerar.TransportError,
                                    "communicator unusable after an earlier failure: " + failure):
            comm.allreduce(np.ones(8, dtype=np.float32))

    def test_invalid_buffers_raise_before_any_communication(self):
        ring = ThreadRing(2)
        comm = Communicator(_cerar._python_communicator(ThreadTransport(ring, 0), 0, 2, 4096),
                            "test")
        with self.assertRaisesRegex(cerar.InvalidArgument, "int32"):
            comm.allreduce(np.zeros(4, dtype=np.int32))
        with self.assertRaisesRegex(cerar.InvalidArgument, "contiguous"):
            comm.allreduce(np.zeros((4, 4))[:, 1])
        with self.assertRaisesRegex(cerar.InvalidArgument, "list"):
            comm.allreduce([1.0, 2.0])
        three = cerar.load_design(os.path.join(MATRICES, "eps_N3_c6.json"))
        with self.assertRaisesRegex(cerar.InvalidArgument, "N = 3"):
            comm.allreduce(np.zeros(4), three)
        # "False" is a true string: it once averaged.
        with self.assertRaisesRegex(cerar.InvalidArgument, "average = 'False', expected True"):
            comm.allreduce(np.zeros(4), None, average="False")
        import torch
        # A sparse tensor has no storage to reduce in place (torch's RuntimeError before), and
        # a torch object that is no tensor was taken for one (AttributeError).
        with self.assertRaisesRegex(cerar.InvalidArgument, "layout torch.sparse_coo"):
            comm.allreduce(torch.ones(8).to_sparse())
        with self.assertRaisesRegex(cerar.InvalidArgument, "Size, expected a torch tensor"):
            comm.allreduce(torch.Size([3]))
        with self.assertRaisesRegex(cerar.InvalidArgument, "encoder rank = '0', expected an integer"):
            three.encoder("0")
        with self.assertRaisesRegex(cerar.InvalidArgument, "decoder rank = 2147483648, out of range"):
            three.decoder(2**31)
        self.assertEqual(comm.failure, "")

    def test_a_tensor_subclass_from_user_code_is_a_tensor(self):
        # _buffer dispatched on the type's module name: a subclass defined outside torch was
        # refused as "expected a torch tensor or numpy array".
        import torch

        class Grad(torch.Tensor):
            pass

        self.assertEqual(Grad.__module__, __name__)
        out, _ = run_ranks(2, lambda comm: comm.allreduce(
            torch.full((10,), comm.rank + 1.0).as_subclass(Grad), None, average=True))
        for result, error in out:
            self.assertIsNone(error, error)
            self.assertTrue(torch.equal(result.as_subclass(torch.Tensor), torch.full((10,), 1.5)))

    def test_ranks_that_disagree_all_get_the_error(self):
        def body(comm):
            comm.allreduce(np.zeros(10 + comm.rank))

        out, comms = run_ranks(3, body)
        for r in range(3):
            self.assertIsInstance(out[r][1], cerar.TransportError)
            self.assertIn("disagree", str(out[r][1]))

    def test_check_every_call_catches_ranks_reusing_different_cached_designs(self):
        # Both designs' objects are built (and checked) while the ranks agree; then rank 0 passes
        # the other one. Without check_every_call nothing is checked on a cached object and the
        # sums are garbage (relative error ~0.5 in the Python audit); with it every rank raises.
        eps = cerar.load_design(os.path.join(MATRICES, "eps_N3_c6.json"))
        opt = cerar.load_design(os.path.join(MATRICES, "opt_N3_c6.json"))
        self.assertNotEqual(eps.fingerprint, opt.fingerprint)

        def body(comm):
            for d in (eps, opt):
                comm.allreduce(np.ones(64), d)
            comm.allreduce(np.ones(64), eps if comm.rank == 0 else opt)

        out, _ = run_ranks(3, body, check_every_call=True)
        for r in range(3):
            self.assertIsInstance(out[r][1], cerar.TransportError, "rank %d: %r" % (r, out[r]))
            self.assertIn("disagree on all-reduce call", str(out[r][1]))
        # Rank 0 builds a new object (average differs) while the others reuse theirs: every rank
        # meets in the same call check (rank 0 was in the algorithm check, the others in the call
        # check, and the messages disagreed).

        def mixed(comm):
            comm.allreduce(np.ones(64), None, average=True)
            comm.allreduce(np.ones(64), None, average=comm.rank != 0)

        out, _ = run_ranks(3, mixed, check_every_call=True)
        for r in range(3):
            self.assertIsInstance(out[r][1], cerar.TransportError, "rank %d: %r" % (r, out[r]))
            self.assertIn("disagree on all-reduce call (count, dtype, op, design, accumulation)",
                          str(out[r][1]))
        out, _ = run_ranks(3, lambda comm: [comm.allreduce(np.ones(64), eps) for _ in range(3)],
                           check_every_call=True)
        for r in range(3):
            self.assertIsNone(out[r][1], "rank %d: %r" % (r, out[r][1]))

    def test_hook_options_are_checked_across_ranks(self):
        # A rank with another layout lays out the same element count differently: the
        # all-reduce's own checks pass and the gradients come out wrong (the Python audit).
        import cerar.ddp
        import torch

        def body(comm):
            state = cerar.ddp.CerarHookState(comm, c=6, warmup_steps=0,
                                             layout="flat" if comm.rank == 0 else "tensor")
            buffer = torch.ones(6 * 6 + 3 * 4)
            grads = [buffer[:36].view(6, 6), buffer[36:].view(3, 4)]
            cerar.ddp.allreduce_bucket(state, buffer, grads)

        out, _ = run_ranks(3, body)
        for r in range(3):
            self.assertIsInstance(out[r][1], cerar.TransportError, "rank %d: %r" % (r, out[r]))
            self.assertIn("disagree on DDP hook options and design (this rank: layout=", str(out[r][1]))

    def test_two_hooked_models_on_one_communicator_keep_their_objects(self):
        # Every hook state calls end_step after its own last bucket, and end_step evicted every
        # object unused since the previous one: model A's call evicted B's objects and B's
        # evicted A's, so every bucket's engine was rebuilt (workspace, agreement checks) each
        # step. Objects now go after two unused end_steps in a row; their serials show rebuilds.
        import cerar.ddp
        import torch

        class Bucket:
            def __init__(self, buffer, shapes):
                self._buffer, offset, self._grads = buffer, 0, []
                for shape in shapes:
                    n = int(torch.Size(shape).numel())
                    self._grads.append(buffer[offset:offset + n].view(shape))
                    offset += n

            def buffer(self):
                return self._buffer

            def gradients(self):
                return self._grads

            def is_last(self):
                return True

        models = {"A": [(6, 5), (5,)], "B": [(4, 9), (3, 4), (4,)]}

        def body(comm):
            states = {k: cerar.ddp.CerarHookState(comm, c=6, warmup_steps=0) for k in models}
            serials = []
            for step in range(6):
                for key, shapes in models.items():
                    n = sum(int(torch.Size(s).numel()) for s in shapes)
                    buffer = torch.randn(n, generator=torch.Generator().manual_seed(step))
                    buffer[::3] = 0  # zeros, so the zero mask's all-reduces run too
                    cerar.ddp.cerar_hook(states[key], Bucket(buffer, shapes)).wait()
                serials.append(sorted(e.serial for e in comm.cache_info()))
            return serials

        out, _ = run_ranks(3, body)
        for r in range(3):
            serials, error = out[r]
            self.assertIsNone(error, "rank %d: %r" % (r, error))
            self.assertGreaterEqual(len(serials[1]), 6, serials)  # both models' objects
            for step in range(2, 6):
                self.assertEqual(serials[step], serials[1], "rank %d step %d" % (r, step))

    def test_hook_c_chooses_for_the_gradients_dtype(self):
        # c = 8 chose the float32 design for a float64 model too (opt_N4_c8, 1.8 times the
        # float64 error of the catalogue's best for float64). The first bucket's dtype decides.
        import cerar.ddp
        import torch
        f32, f64 = cerar.pick_design(4, 8, "float32"), cerar.pick_design(4, 8, "float64")
        self.assertNotEqual(f32.fingerprint, f64.fingerprint)

        def body(comm):
            states = [cerar.ddp.CerarHookState(comm, c=8, warmup_steps=0) for _ in range(2)]
            chosen = [states[0].design.fingerprint]
            for state, dtype in zip(states, (torch.float64, torch.float32)):
                buffer = torch.ones(8 * 6, dtype=dtype)
                cerar.ddp.allreduce_bucket(state, buffer, [buffer.view(8, 6)])
                chosen.append(state.design.fingerprint)
            return chosen

        out, _ = run_ranks(4, body)
        for r in range(4):
            chosen, error = out[r]
            self.assertIsNone(error, "rank %d: %r" % (r, error))
            self.assertEqual(chosen, [f32.fingerprint, f64.fingerprint, f32.fingerprint])

    def test_hook_names_buckets_it_cannot_take(self):
        # A CUDA or float16/bfloat16 DDP model failed in every backward() with the all-reduce's
        # "expected a CPU tensor" / "expected float32 or float64", and no doc said the hook is
        # CPU float32/float64 only. The hook now says so at the first bucket, naming both.
        import cerar.ddp
        import torch
        comm = Communicator(_cerar._python_communicator(ThreadTransport(ThreadRing(4), 0), 0, 4,
                                                        4096), "test")

        class Bucket:
            def __init__(self, buffer):
                self._buffer = buffer

            def buffer(self):
                return self._buffer

            def gradients(self):
                return [self._buffer]

            def is_last(self):
                return False

        for buffer, words in ((torch.zeros(8, dtype=torch.bfloat16), "bfloat16 on cpu"),
                              (torch.zeros(8, dtype=torch.float16), "float16 on cpu"),
                              (torch.zeros(8, device="meta"), "float32 on meta")):
            state = cerar.ddp.CerarHookState(comm, c=8)
            with self.assertRaisesRegex(Exception, "DDP hook: a bucket of %s; the CERAR hook "
                                        "supports CPU float32/float64 buckets only: keep the DDP "
                                        "model on the CPU" % words):
                cerar.ddp.cerar_hook(state, Bucket(buffer)).wait()
            self.assertIsInstance(state.last_error, cerar.InvalidArgument)

    def test_scale_rows_takes_huge_rows_and_empty_tensors(self):
        # The rows' sums of squares went through a float32 all-reduce: a row of 1e20 summed to
        # inf, its scale was inf, and it came back NaN. A 2-D tensor without elements raised
        # from view(). Sums are float64 now, and empty tensors are skipped.
        import cerar.ddp
        import torch
        design = cerar.pick_design(2, 4)
        rows = [torch.randn(6, 5, generator=torch.Generator().manual_seed(r)) for r in range(2)]
        for r, m in enumerate(rows):
            m[2] = 1e20 * (1 + r + torch.arange(5.0))

        def body(comm):
            scales = cerar.ddp._row_scales(comm, [rows[comm.rank], torch.zeros(0, 4)])
            state = cerar.ddp.CerarHookState(comm, design, warmup_steps=0, scale_rows=True)
            buffer = torch.cat([rows[comm.rank].reshape(-1), torch.ones(8 * 3)])
            grads = [buffer[:30].view(6, 5), buffer[30:30].view(0, 4), buffer[30:].view(8, 3)]
            cerar.ddp.allreduce_bucket(state, buffer, grads)
            return scales, buffer[:30].view(6, 5)

        out, _ = run_ranks(2, body)
        exact = (rows[0] + rows[1]).double() / 2
        truth = ((rows[0].double() ** 2 + rows[1].double() ** 2).sum(dim=1) / 10).sqrt()
        for r in range(2):
            result, error = out[r]
            self.assertIsNone(error, "rank %d: %r" % (r, error))
            (scale, empty), reduced = result
            self.assertIsNone(empty)
            self.assertEqual(scale.dtype, torch.float32)
            torch.testing.assert_close(scale.squeeze(1).double(), truth, rtol=1e-6, atol=0)
            self.assertTrue(bool(torch.isfinite(reduced).all()), reduced)
            # Each row's error relative to its own size, as row scaling promises.
            err = ((reduced.double() - exact).norm(dim=1) / exact.norm(dim=1)).max()
            self.assertLess(float(err), 10 * design.predicted_error("float32"))

    def test_a_failing_transport_is_an_exception_and_the_communicator_stops(self):
        def body(comm):
            comm.allreduce(np.ones(100), None)

        out, comms = run_ranks(3, body, fail_rank=1, timeout=2)
        self.assertIsInstance(out[1][1], cerar.TransportError)
        self.assertIn("link to rank 0 cut", str(out[1][1]))
        # The type and text of the Python exception, without pybind11's traceback ("At:").
        self.assertTrue(str(out[1][1]).endswith("wait failed: ConnectionError: link to rank 0 cut"),
                        str(out[1][1]))
        with self.assertRaisesRegex(cerar.TransportError, "unusable.*link to rank 0 cut"):
            comms[1].allreduce(np.ones(100))


GROUP_PROGRAM = """
import sys
import torch
import torch.distributed as dist
import cerar
rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=rank, world_size=2)
group = dist.new_group([0])  # rank 1 is not in it
try:
    cerar.torch_communicator(group, timeout_s=30)
except cerar.InvalidArgument as e:
    print("refused:", e, flush=True)
comm = cerar.torch_communicator(None, timeout_s=30)  # the ranks' groups are still in step
x = torch.ones(4)
comm.allreduce(x)
print("world", float(x[0]), flush=True)
"""


class TorchGroupTest(unittest.TestCase):
    def test_a_rank_outside_the_group_is_told_so(self):
        # torch_communicator(group) on a rank that new_group left out failed as "python
        # transport: rank -1 of -1". It takes part in new_group (collective over the job, so
        # the members do not wait) and raises, saying so; a later communicator still works.
        import subprocess
        try:
            import torch.distributed as dist
        except ImportError:
            self.skipTest("no torch")
        if not dist.is_available() or not dist.is_gloo_available():
            self.skipTest("torch without gloo")
        with tempfile.TemporaryDirectory() as tmp:
            store = os.path.join(tmp, "store")
            procs = [subprocess.Popen([sys.executable, "-c", GROUP_PROGRAM, str(r), store],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for r in range(2)]
            outs = [p.communicate(timeout=120)[0] for p in procs]
        for r, (p, out) in enumerate(zip(procs, outs)):
            self.assertEqual(p.returncode, 0, "rank %d:\n%s" % (r, out))
            self.assertIn("world 2.0", out, "rank %d" % r)
        self.assertIn("refused: torch communicator: this rank (global rank 1 of 2) is not a member "
                      "of the group", outs[1])


class LauncherTextTest(unittest.TestCase):
    def test_every_torchrun_command_passes_redirects(self):
        # Debian's torchrun (torch 1.13 on Python 3.11) fails at start on its default
        # --redirects 0 (docs/training.md section 3). scripts/train --torchrun and train.py's
        # docstring left the flags out while the docs said scripts/train passed them.
        import glob
        import re
        paths = [os.path.join(ROOT, "README.md")]
        for pattern in ("scripts/*", "docs/**/*.md", "python/**/*.py", "tests/python/*.sh"):
            paths += glob.glob(os.path.join(ROOT, pattern), recursive=True)
        command = re.compile(r"\btorchrun((?:\s+-\S+(?:\s+[^\s-]\S*)?)+)\s+\S*(?:\.py|\$train)")
        found = []
        for path in sorted(p for p in paths if os.path.isfile(p)):
            with open(path, errors="replace") as f:
                text = re.sub(r"\\\n\s*", " ", f.read())  # shell line continuations
            for match in command.finditer(text):
                found.append(os.path.relpath(path, ROOT))
                options = match.group(1).split()
                self.assertIn("--redirects", options, "%s: %s" % (path, match.group(0)))
                self.assertIn("--tee", options, "%s: %s" % (path, match.group(0)))
        for where in ("scripts/train", "python/train/train.py", "docs/training.md"):
            self.assertIn(where, found)


if __name__ == "__main__":
    unittest.main(verbosity=2)
