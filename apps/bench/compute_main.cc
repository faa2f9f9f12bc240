// cerar-bench-compute [--N 8] [--elements 16777216] [--reps 5] [--segment 1048576]
// CPU encode and decode throughput of the back end, float32, for c in {8, 16, 32, 64}, over column
// segments of `segment` bytes per row (default the engine's 1 MiB), against Eigen's own GEMM on
// the same shapes (contiguous column-major matrices, one call). GFLOP/s = 2 * rows * c * m / time;
// best of `reps` runs. Three encode shapes:
//   "enc L rows": all L encoder rows in one call per segment (a batched encode);
//   "enc 1 row":  one row per call (how the engine encoded until 2026-12-07), so each call reads
//                 the segment's c components again;
//   "enc engine": the engine's calls (runtime/src/coded_allreduce.cc): row 0 at round 0, then
//                 EncodeRowsAfterSend's blocks of kEncodeBlockRows rows after the sends.
// The engine may also split a segment into progress blocks of >= 2^20 flops; that is not timed.
// "ratio" is the batched encode's (and the decode's) time against Eigen's. The decode is what the
// engine calls (all c rows per segment). The last two columns: the batched encode and the decode
// with Accumulation::kFloat64 (float64 arithmetic, each result rounded once), as GFLOP/s.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cerar/format/printable.h"
#include "cerar/runtime/backend.h"
#include "cli_checks.h"
#include "schedule.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double Best(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

constexpr int kCs[] = {8, 16, 32, 64};

int Fail(const std::string& message) {
  std::fprintf(stderr, "cerar-bench-compute: %s\n", cerar::Printable(message, 4096).c_str());
  return 2;
}

// The largest memory any c needs: the back end's g, encoded and observed vectors, and Eigen's
// G, X, O, Y (float32, m = ceil(d / c) columns).
double BytesNeeded(int N, std::uint64_t elements) {
  double most = 0;
  for (int c : kCs) {
    const double m = std::ceil(double(elements) / c), L = c + N - 2;
    most = std::max(most, 4.0 * m * (2 * (2 * c + L) + c));
  }
  return most;
}

int Main(int argc, char** argv) {
  int N = 8, reps = 5;
  long long elements = 1LL << 24, segment = 1LL << 20;
  CLI::App app{"CPU encode and decode throughput of the back end against Eigen's GEMM (float32)",
               "cerar-bench-compute"};
  app.add_option("--N", N, "ranks (L = c + N - 2 encoded rows)")
      ->check(CLI::Range(2, 4096))->capture_default_str();
  app.add_option("--elements", elements, "d, elements per rank")
      ->check(CLI::Range(64LL, 1LL << 40))->capture_default_str();
  app.add_option("--reps", reps, "runs per figure (best of)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--segment", segment, "largest column segment, bytes (a multiple of 4)")
      ->check(CLI::Range(4LL, 1LL << 30))->capture_default_str();
  cerar::cli::CheckEveryValue(app);
  if (const int rc = cerar::cli::ParseArguments(app, argc, argv); rc >= 0) return rc;
  if (segment % sizeof(float))
    return Fail("--segment " + std::to_string(segment) + ": not a whole number of float32 "
                "elements (4 bytes each)");
  const double need = BytesNeeded(N, std::uint64_t(elements));
  const double have = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  if (need > have) {
    char b[160];
    std::snprintf(b, sizeof b, "--elements %lld with --N %d needs %.1f GiB; this machine has "
                  "%.1f GiB", elements, N, need / (1 << 30), have / (1 << 30));
    return Fail(b);
  }
  std::printf("cerar-bench-compute: float32, N = %d, d = %lld elements, segment %lld bytes, "
              "best of %d, Eigen %d.%d.%d, SIMD %s\n",
              N, elements, segment, reps, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION,
              Eigen::SimdInstructionSetsInUse());
  std::printf("%4s %4s %10s | %11s %11s %11s %11s %6s | %11s %11s %6s | %10s %10s\n", "c", "L",
              "m", "enc L rows", "enc 1 row", "enc engine", "eigen GF/s", "ratio", "decode GF/s",
              "eigen GF/s", "ratio", "enc acc64", "dec acc64");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  for (int c : kCs) {
    const int L = c + N - 2;
    const std::size_t m = (elements + c - 1) / c;
    cerar::MatrixXd E(L, c), D(c, c);
    for (int i = 0; i < L * c; ++i) E.data()[i] = normal(rng);
    for (int i = 0; i < c * c; ++i) D.data()[i] = normal(rng);
    auto be = cerar::CreateCpuBackend();
    be->SetMatrices(E, D);
    std::vector<float> g(c * m), enc(L * m), obs(c * m);
    for (auto& v : g) v = normal(rng);
    for (auto& v : obs) v = normal(rng);
    const auto segs = cerar::PlanSegments(c * m, c, segment / sizeof(float));
    // Best encode and decode times with the back end's arithmetic set to `accumulation`.
    auto time_calls = [&](cerar::Accumulation accumulation) {
      be->SetAccumulation(accumulation);
      const double encode = Best(reps, [&] {
        for (const auto& s : segs)
          be->Encode(cerar::DType::kFloat32, g.data(), m, s.col0, s.cols, s.kc, {0, L},
                     enc.data(), m);
      });
      const double decode = Best(reps, [&] {
        for (const auto& s : segs)
          be->Decode(cerar::DType::kFloat32, obs.data(), m, g.data(), m, s.col0, s.cols, s.kc,
                     1.0);
      });
      return std::make_pair(encode, decode);
    };
    const auto [t_enc, t_dec] = time_calls(cerar::Accumulation::kBuffer);
    // One encoder row per call, every row of every segment.
    const double t_row = Best(reps, [&] {
      for (const auto& s : segs)
        for (int l = 0; l < L; ++l)
          be->Encode(cerar::DType::kFloat32, g.data(), m, s.col0, s.cols, s.kc, {l, 1},
                     enc.data(), m);
    });
    // The engine's calls, round by round: e(0) in round 0, then the schedule's blocks.
    const double t_engine = Best(reps, [&] {
      for (int t = 0; t < L; ++t)
        for (const auto& s : segs) {
          if (t == 0)
            be->Encode(cerar::DType::kFloat32, g.data(), m, s.col0, s.cols, s.kc, {0, 1},
                       enc.data(), m);
          const cerar::RowRange rows = cerar::EncodeRowsAfterSend(N, c, t);
          if (rows.count > 0)
            be->Encode(cerar::DType::kFloat32, g.data(), m, s.col0, s.cols, s.kc, rows,
                       enc.data(), m);
        }
    });
    const auto [t_enc64, t_dec64] = time_calls(cerar::Accumulation::kFloat64);
    // Eigen's GEMM on the same shapes: (L x c)(c x m) and (c x c)(c x m), plus the "+ g" of the
    // decoder as "+=".
    Eigen::MatrixXf Ef = E.cast<float>(), Df = D.cast<float>();
    Eigen::MatrixXf G = Eigen::MatrixXf::Random(c, m), X(L, m), O = Eigen::MatrixXf::Random(c, m);
    Eigen::MatrixXf Y = Eigen::MatrixXf::Random(c, m);
    const double t_eenc = Best(reps, [&] { X.noalias() = Ef * G; });
    const double t_edec = Best(reps, [&] { Y.noalias() += Df * O; });
    const double f_enc = 2.0 * L * c * m, f_dec = 2.0 * c * c * m;
    std::printf("%4d %4d %10zu | %11.2f %11.2f %11.2f %11.2f %6.2f | %11.2f %11.2f %6.2f | "
                "%10.2f %10.2f\n",
                c, L, m, f_enc / t_enc / 1e9, f_enc / t_row / 1e9, f_enc / t_engine / 1e9,
                f_enc / t_eenc / 1e9, t_eenc / t_enc, f_dec / t_dec / 1e9, f_dec / t_edec / 1e9,
                t_edec / t_dec, f_enc / t_enc64 / 1e9, f_dec / t_dec64 / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::bad_alloc&) {
    return Fail("out of memory: the buffers need more memory than this process can allocate");
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}
