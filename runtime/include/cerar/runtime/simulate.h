#pragma once
// Simulate: run a design in-process (N ranks as threads over the in-process transport, CPU back
// end) on random data and measure what it does. The library call behind `cerar simulate`.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/runtime/allreduce.h"

namespace cerar {

struct SimulateOptions {
  std::size_t count = std::size_t{1} << 20;  // elements per rank
  DType dtype = DType::kFloat32;
  Accumulation accumulation = Accumulation::kBuffer;  // the coded engine's (backend.h)
  std::uint64_t seed = 1;  // rank i draws i.i.d. N(0, 1) inputs from seed and i
  ReduceOp op = ReduceOp::kSum;
  std::size_t segment_bytes = std::size_t{1} << 20;
  double timeout_s = 120;
  bool run_ring = true;  // also run the exact ring on the same inputs (bytes, time, error)
};

struct SimulateResult {
  // Relative error ||S_hat_j - S|| / ||S|| against the exact sum (long double), MAX over ranks j
  // — the same "max over ranks" as the design's err_rms, which it should reproduce.
  double measured_err_rms = 0;
  std::vector<double> err_per_rank;
  // The err_rms the design records (its figures), which the measurement should reproduce; NaN
  // when it records none. The runtime does not analyse designs: cerar::design::Analyse does.
  double recorded_err_rms = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t bytes_sent_per_rank = 0;       // measured by the transport, max over ranks
  std::uint64_t ring_bytes_sent_per_rank = 0;  // same for the exact ring (0 if not run)
  std::uint64_t workspace_bytes = 0;           // coded engine, per rank
  double seconds = 0;       // wall time of the coded all-reduce, slowest rank
  double ring_seconds = 0;  // same for the ring
  double ring_err = 0;      // the ring's relative error (rounding only), max over ranks
};

// Throws InvalidArgument before anything is allocated when the run cannot fit: N above
// kMaxSimulateRanks, or more memory than AvailableMemoryBytes() (see CheckSimulateFits). Throws
// NumericalError when the design's matrices overflow the arithmetic (a non-finite result).
SimulateResult Simulate(const Design& design, const SimulateOptions& options);

// Each simulated rank is a thread of its own: the in-process transport's ranks block in their
// waits for the predecessor's data, so ranks cannot share threads, and N threads must start.
// Larger N belongs on the MPI transport (cerar-bench), where each rank is a process.
inline constexpr int kMaxSimulateRanks = 1024;

// Bytes Simulate allocates at its peak: per rank the input, its working copy, the engine's
// workspace and the messages in flight, plus the exact sums (long double). Empty when the
// figure does not fit in 64 bits.
std::optional<std::uint64_t> SimulateMemoryBytes(const Design& design,
                                                 const SimulateOptions& options);

// Bytes this process can allocate: the least of physical memory, RLIMIT_AS, RLIMIT_DATA and
// the cgroup's memory.max.
std::uint64_t AvailableMemoryBytes();

// Throws InvalidArgument when Simulate(design, options) cannot run here: too many ranks for
// threads, or more memory than AvailableMemoryBytes(). `count_name` names the element count in
// the message ("--count" for the CLI).
void CheckSimulateFits(const Design& design, const SimulateOptions& options,
                       const std::string& count_name = "count");

}  // namespace cerar
