// Simulate (see cerar/runtime/simulate.h): random inputs, exact sum in long double, the coded
// all-reduce and the exact ring on N threads, errors, bytes, workspace and time.
#include "cerar/runtime/simulate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/inprocess.h"
#include "schedule.h"

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

// "38.4 GB (38400000000 bytes)".
std::string BytesText(std::uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g GB (%llu bytes)", double(bytes) / 1e9,
                static_cast<unsigned long long>(bytes));
  return text;
}

double LargestEntry(const Design& design) {
  double largest = 0;
  for (const auto& e : design.encoders()) largest = std::max(largest, e.cwiseAbs().maxCoeff());
  for (const auto& d : design.decoders()) largest = std::max(largest, d.cwiseAbs().maxCoeff());
  return largest;
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
  ao.accumulation = o.accumulation;
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
  for (int r = 0; r < N; ++r) {
    // Entries of order 1e308 are finite, so a design may hold them, but the encoded sums
    // overflow: say so instead of reporting a "measured error" of NaN.
    if (!std::isfinite(res.err_per_rank[r])) {
      char largest[32];
      std::snprintf(largest, sizeof largest, "%.3g", LargestEntry(design));
      throw NumericalError("simulate: rank " + std::to_string(r) + "'s result is not finite: " +
                           "the design's matrices (largest |entry| " + largest +
                           ") overflow " + ToString(o.dtype) +
                           " arithmetic; a usable design has entries of moderate size");
    }
  }
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

std::optional<std::uint64_t> SimulateMemoryBytes(const Design& design,
                                                 const SimulateOptions& options) {
  bool fits = true;
  auto mul = [&](std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    fits = fits && !__builtin_mul_overflow(a, b, &r);
    return r;
  };
  auto add = [&](std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    fits = fits && !__builtin_add_overflow(a, b, &r);
    return r;
  };
  const std::uint64_t N = design.N(), c = design.c(), L = design.L();
  const std::uint64_t n = options.count, es = SizeOf(options.dtype);
  const std::uint64_t m = n / c + (n % c ? 1 : 0);  // columns: elements per component
  const std::uint64_t vector = mul(n, es);
  const std::uint64_t segment = std::min<std::uint64_t>(options.segment_bytes, mul(m, es));
  // The workspace rows as the engine lays them out (MakeWorkspaceLayout): N more rows where the
  // accumulation feeds rounding back, and 8 bytes per element where it keeps float64 state.
  const std::unique_ptr<ComputeBackend> backend = CreateCpuBackend();
  std::uint64_t rows = L + 2, row_es = es;
  if (backend->SupportsAccumulation(options.dtype, options.accumulation)) {
    backend->SetAccumulation(options.accumulation);
    if (backend->FeedsBackRounding(options.dtype) && FeedsBackRounding(design.N(), design.c()))
      rows += N;
    row_es = backend->StateElementBytes(options.dtype);
  }
  // Per rank: its input and the working copy the run overwrites (count elements each), the
  // engine's workspace (rows of m elements and kDefaultSendSlots segments), and up to
  // kDefaultSendSlots segments queued on its incoming link.
  std::uint64_t rank = add(mul(2, vector), mul(mul(rows, m), row_es));
  rank = add(rank, mul(2 * kDefaultSendSlots, segment));
  // Plus the exact sums, one long double per element.
  const std::uint64_t total = add(mul(N, rank), mul(n, sizeof(long double)));
  if (!fits) return std::nullopt;
  return total;
}

std::uint64_t AvailableMemoryBytes() {
  std::uint64_t limit = UINT64_MAX;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = std::uint64_t(pages) * std::uint64_t(page);
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit r{};
    if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
      limit = std::min<std::uint64_t>(limit, r.rlim_cur);
    }
  }
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");  // cgroup v2; "max" when unlimited
  std::string value;
  if (cgroup >> value && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
    limit = std::min<std::uint64_t>(limit, std::stoull(value));
  }
  return limit;
}

void CheckSimulateFits(const Design& design, const SimulateOptions& options,
                       const std::string& count_name) {
  if (design.N() > kMaxSimulateRanks) {
    throw InvalidArgument(
        "simulate: N = " + std::to_string(design.N()) + " ranks would need " +
        std::to_string(design.N()) + " threads: in-process ranks block while they wait for " +
        "their predecessor, so each needs its own; simulate runs at most " +
        std::to_string(kMaxSimulateRanks) + " (run larger N over MPI: cerar-bench)");
  }
  const auto need = SimulateMemoryBytes(design, options);
  const std::uint64_t have = AvailableMemoryBytes();
  if (!need || *need > have) {
    throw InvalidArgument(
        "simulate: " + count_name + " " + std::to_string(options.count) + " (" +
        ToString(options.dtype) + ", N = " + std::to_string(design.N()) + ", c = " +
        std::to_string(design.c()) + ") needs " +
        (need ? BytesText(*need) : std::string("more than 2^64 bytes")) +
        " for inputs, results, workspaces and exact sums; this process can use " +
        BytesText(have));
  }
}

SimulateResult Simulate(const Design& design, const SimulateOptions& options) {
  CheckSimulateFits(design, options);
  if (options.dtype == DType::kFloat32) return Run<float>(design, options);
  if (options.dtype == DType::kFloat64) return Run<double>(design, options);
  throw InvalidArgument("simulate: dtype " + ToString(options.dtype) +
                        " not supported, use f32 or f64");
}

}  // namespace cerar
