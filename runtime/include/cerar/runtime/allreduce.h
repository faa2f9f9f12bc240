#pragma once
// All-reduce objects, in place on the caller's buffer:
//   CodedAllReduce - the CERAR protocol (PROTOCOL.md §2-§3) for a validated Design;
//   RingAllReduce  - the exact ring all-reduce (reduce-scatter + all-gather), the baseline,
// both on the same Transport so comparisons measure the algorithm and not the plumbing.
//
// Construction is collective: every rank checks with its peers that they agree on the element
// count, dtype, op and (coded) the design fingerprint, then that the design is for as many ranks
// as the transport has. A disagreement throws TransportError (or InvalidArgument for a size
// mismatch) on every rank, naming both values.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/transport.h"

namespace cerar {

enum class ReduceOp { kSum, kAverage };

struct AllReduceOptions {
  DType dtype = DType::kFloat32;  // f32 or f64 (CPU); what the back end supports (coded)
  ReduceOp op = ReduceOp::kSum;
  // Pipelining: each m-element vector is cut into segments of this many bytes; a segment is
  // encoded, stepped and sent on its own so the link is busy while the next one is computed.
  std::size_t segment_bytes = std::size_t{1} << 20;
};

class CodedAllReduce {
 public:
  // `transport` and `backend` must outlive this object. The buffers passed to Run live in the
  // back end's memory space. The constructor loads this rank's E_i, D_i into the back end, which
  // holds one design at a time: give each CodedAllReduce its own back end.
  CodedAllReduce(const Design& design, Transport& transport, ComputeBackend& backend,
                 std::size_t count, AllReduceOptions options = {});
  ~CodedAllReduce();
  CodedAllReduce(const CodedAllReduce&) = delete;
  CodedAllReduce& operator=(const CodedAllReduce&) = delete;

  // buffer: `count` elements of `options.dtype`; on return it holds this rank's decoded
  // estimate of the sum (or average) over ranks. Collective.
  void Run(void* buffer);

  std::size_t count() const { return count_; }
  std::size_t m() const { return m_; }  // elements per vector, ceil(count / c)
  // Workspace held by this object, in bytes: (L + 2) m elements plus min(kSendSlots, segments)
  // send slots of the largest segment (WorkspaceLayout::bytes() in schedule.h), so at most
  // (1 + N/c) d elements + kSendSlots · segment_bytes.
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Bytes every run sends per rank: L m sizeof(T).
  std::uint64_t expected_bytes_per_run() const;

 private:
  Design design_;
  Transport& transport_;
  ComputeBackend& backend_;
  std::size_t count_, m_;
  AllReduceOptions options_;
  std::size_t workspace_bytes_ = 0;
  void* workspace_ = nullptr;
};

class RingAllReduce {
 public:
  // Host memory only (the baseline for the CPU transports).
  RingAllReduce(Transport& transport, std::size_t count, AllReduceOptions options = {});
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  void Run(void* buffer);

  std::size_t workspace_bytes() const { return scratch_.size(); }
  // 2 (N-1) ceil-chunk bytes; exactly 2 (N-1) count/N sizeof(T) when N divides count.
  std::uint64_t expected_bytes_per_run() const;

 private:
  Transport& transport_;
  std::size_t count_;
  AllReduceOptions options_;
  std::vector<char> scratch_;
};

}  // namespace cerar
