// Simulate (see cerar/runtime/simulate.h): random inputs, exact sum in long double, the coded
// all-reduce and the exact ring on N threads, errors, bytes, workspace and time.
#include "cerar/runtime/simulate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cerar/format/errors.h"
#include "cerar/runtime/inprocess.h"
#include "cerar/runtime/schedule.h"

namespace cerar {
namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
std::vector<std::vector<char>> MakeInputs(int N, std::size_t count, std::uint64_t seed) {
  std::vector<std::vector<char>> in(N, std::vector<char>(count * sizeof(T)));
  for (int i = 0; i < N; ++i) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + std::uint64_t(i));
    std::normal_distribution<double> normal(0.0, 1.0);
    T* p = reinterpret_cast<T*>(in[i].data());
    for (std::size_t k = 0; k < count; ++k) p[k] = static_cast<T>(normal(rng));
  }
  return in;
}

template <typename T>
std::vector<long double> ExactSum(const std::vector<std::vector<char>>& in, std::size_t count,
                                  long double scale) {
  std::vector<long double> s(count, 0.0L);
  for (const auto& b : in) {
    const T* p = reinterpret_cast<const T*>(b.data());
    for (std::size_t k = 0; k < count; ++k) s[k] += p[k];
  }
  for (auto& v : s) v *= scale;
  return s;
}

template <typename T>
double RelErr(const std::vector<char>& out, const std::vector<long double>& exact) {
  const T* p = reinterpret_cast<const T*>(out.data());
  long double num = 0, den = 0;
  for (std::size_t k = 0; k < exact.size(); ++k) {
    const long double d = static_cast<long double>(p[k]) - exact[k];
    num += d * d;
    den += exact[k] * exact[k];
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return static_cast<double>(std::sqrt(num / den));
}

void ThrowFirst(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

template <typename T>
SimulateResult Run(const Design& design, const SimulateOptions& o) {
  const int N = design.N();
  SimulateResult res;
  if (design.figures()) res.recorded_err_rms = design.figures()->err_rms;
  const auto inputs = MakeInputs<T>(N, o.count, o.seed);
  const long double scale = o.op == ReduceOp::kAverage ? 1.0L / N : 1.0L;
  const auto exact = ExactSum<T>(inputs, o.count, scale);
  AllReduceOptions ao;
  ao.dtype = o.dtype;
  ao.op = o.op;
  ao.segment_bytes = o.segment_bytes;
  InProcessOptions io;
  io.timeout_s = o.timeout_s;

  auto run_all = [&](bool coded, std::vector<double>& err, std::uint64_t& bytes, double& secs) {
    auto bufs = inputs;
    std::vector<double> rank_secs(N, 0.0);
    std::vector<std::uint64_t> rank_bytes(N, 0), rank_ws(N, 0);
    ThrowFirst(RunInProcess(N, [&](Transport& tr) {
      const int r = tr.rank();
      std::unique_ptr<ComputeBackend> backend = CreateCpuBackend();
      if (coded) {
        CodedAllReduce ar(design, tr, *backend, o.count, ao);
        tr.ResetCounters();
        const auto t0 = Clock::now();
        ar.Run(bufs[r].data());
        rank_secs[r] = std::chrono::duration<double>(Clock::now() - t0).count();
        rank_ws[r] = ar.workspace_bytes();
      } else {
        RingAllReduce ar(tr, o.count, ao);
        tr.ResetCounters();
        const auto t0 = Clock::now();
        ar.Run(bufs[r].data());
        rank_secs[r] = std::chrono::duration<double>(Clock::now() - t0).count();
      }
      rank_bytes[r] = tr.bytes_sent();
    }, io));
    err.resize(N);
    for (int r = 0; r < N; ++r) err[r] = RelErr<T>(bufs[r], exact);
    bytes = *std::max_element(rank_bytes.begin(), rank_bytes.end());
    secs = *std::max_element(rank_secs.begin(), rank_secs.end());
    if (coded) res.workspace_bytes = *std::max_element(rank_ws.begin(), rank_ws.end());
  };

  run_all(true, res.err_per_rank, res.bytes_sent_per_rank, res.seconds);
  res.measured_err_rms = o.count ? *std::max_element(res.err_per_rank.begin(),
                                                     res.err_per_rank.end()) : 0.0;
  if (o.run_ring) {
    std::vector<double> ring_err;
    run_all(false, ring_err, res.ring_bytes_sent_per_rank, res.ring_seconds);
    res.ring_err = o.count ? *std::max_element(ring_err.begin(), ring_err.end()) : 0.0;
  }
  return res;
}

}  // namespace

SimulateResult Simulate(const Design& design, const SimulateOptions& options) {
  if (options.dtype == DType::kFloat32) return Run<float>(design, options);
  if (options.dtype == DType::kFloat64) return Run<double>(design, options);
  throw InvalidArgument("simulate: dtype " + ToString(options.dtype) +
                        " not supported, use f32 or f64");
}

}  // namespace cerar
