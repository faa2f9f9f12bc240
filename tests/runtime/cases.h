#pragma once
// One rank's part of the all-reduce test cases, on any Transport: the in-process tests run it on
// threads, the MPI tests under mpiexec, so both transports face the same checks.
#include <algorithm>
#include <vector>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/backend.h"
#include "schedule.h"
#include "test_designs.h"

namespace cerar::test {

struct RankOutcome {
  double err = 0;    // || output - reference ||
  double scale = 0;  // magnitude the rounding error is measured against
  double tol = 0;    // allowed err / scale
  std::uint64_t bytes = 0, expected_bytes = 0;
  std::size_t workspace = 0, expected_workspace = 0;
};

// Coded workspace: L + 2 = c + N rows of m = ceil(count / c) elements, plus min(send_slots, S)
// send slots of the largest segment, S = number of segments (PlanSegments) of SegmentColumns
// columns. At most (c + N) m elem_bytes + send_slots segment_bytes.
inline std::size_t CodedWorkspaceBytes(int N, int c, std::size_t count, std::size_t elem_bytes,
                                       std::size_t segment_bytes,
                                       int send_slots = kDefaultSendSlots) {
  const std::size_t m = (count + c - 1) / c;
  const auto segs =
      PlanSegments(count, c, SegmentColumns(m, elem_bytes, segment_bytes, send_slots));
  std::size_t max_cols = 0;
  for (const Segment& s : segs) max_cols = std::max(max_cols, s.cols);
  const std::size_t slots = std::min<std::size_t>(send_slots, segs.size());
  return std::size_t(c + N) * m * elem_bytes + slots * max_cols * elem_bytes;
}

// Rounding budget of one coded run: about L + c + N roundings along any path, each relative to
// the magnitudes in `scale`.
inline double CodedTolerance(const Design& d, double u) { return 2.0 * (d.L() + d.c() + d.N()) * u; }

// Coded all-reduce vs g_j + sum_{i != j} D_j W_ij g_i (PROTOCOL.md §4), bytes vs L ceil(n/c) sizeof(T).
template <typename T>
RankOutcome CodedCase(Transport& tr, const Design& d, std::size_t count, std::uint64_t seed,
                      std::size_t segment_bytes, ReduceOp op = ReduceOp::kSum,
                      int send_slots = kDefaultSendSlots) {
  const int N = d.N(), j = tr.rank();
  const auto g = Inputs<T>(N, count, seed);
  std::vector<T> buf = g[j];
  auto backend = CreateCpuBackend();
  AllReduceOptions o;
  o.dtype = std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
  o.op = op;
  o.segment_bytes = segment_bytes;
  o.send_slots = send_slots;
  CodedAllReduce ar(d, tr, *backend, count, o);
  tr.ResetCounters();
  ar.Run(buf.data());
  RankOutcome r;
  r.bytes = tr.bytes_sent();
  r.expected_bytes = std::uint64_t(d.L()) * ((count + d.c() - 1) / d.c()) * sizeof(T);
  r.workspace = ar.workspace_bytes();
  r.expected_workspace =
      CodedWorkspaceBytes(N, d.c(), count, sizeof(T), segment_bytes, send_slots);
  auto ref = Reference(d, g, j, &r.scale);
  if (op == ReduceOp::kAverage) {
    for (auto& v : ref) v /= N;
    r.scale /= N;
  }
  r.err = DiffNorm(buf, ref);
  r.tol = CodedTolerance(d, UnitRoundoff<T>());
  return r;
}

// Exact ring all-reduce vs the exact sum in long double.
template <typename T>
RankOutcome RingCase(Transport& tr, std::size_t count, std::uint64_t seed,
                     std::size_t segment_bytes) {
  const int N = tr.size(), j = tr.rank();
  const auto g = Inputs<T>(N, count, seed);
  std::vector<T> buf = g[j];
  AllReduceOptions o;
  o.dtype = std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
  o.segment_bytes = segment_bytes;
  RingAllReduce ar(tr, count, o);
  tr.ResetCounters();
  ar.Run(buf.data());
  RankOutcome r;
  r.bytes = tr.bytes_sent();
  const std::uint64_t chunks = count / N + (count % N ? 1 : 0);
  r.expected_bytes = 2ull * (N - 1) * chunks * sizeof(T);
  std::vector<long double> exact(count, 0.0L);
  for (int i = 0; i < N; ++i) {
    long double s = 0;
    for (std::size_t k = 0; k < count; ++k) {
      exact[k] += g[i][k];
      s += (long double)g[i][k] * g[i][k];
    }
    r.scale += double(std::sqrt(s));
  }
  r.err = DiffNorm(buf, exact);
  r.tol = 2.0 * N * UnitRoundoff<T>();
  return r;
}

}  // namespace cerar::test
