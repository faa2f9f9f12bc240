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

// The default in-flight window (AllReduceOptions::send_slots); docs/runtime.md derives it.
inline constexpr int kDefaultSendSlots = 8;

// Where one Run's wall time went on this rank (host clocks, seconds): in Transport::Wait (for a
// neighbour's data or a free send slot), in the back end's arithmetic (with an asynchronous back
// end, the time to queue it), and in Transport::Progress between blocks of arithmetic. The rest
// is starting exchanges and the loop itself. Cheap (two clock reads per call timed), always on;
// scripts/netbench reports it to show what the link waits for.
struct RunTimes {
  double wall_s = 0, wait_s = 0, compute_s = 0, progress_s = 0;
};

struct AllReduceOptions {
  DType dtype = DType::kFloat32;  // f32 or f64 (CPU); what the back end supports (coded)
  ReduceOp op = ReduceOp::kSum;
  // Pipelining: each m-element vector is cut into segments of this many bytes; a segment is
  // encoded, stepped and sent on its own so the link is busy while the next one is computed.
  std::size_t segment_bytes = std::size_t{1} << 20;
  // In-flight window: segments whose exchange may be outstanding at once. The coded engine gives
  // each its own send slot in the workspace (send_slots · segment_bytes at most), and both
  // engines cut a small round into up to send_slots segments (SegmentColumns in schedule.h).
  int send_slots = kDefaultSendSlots;
  // Coded engine: the arithmetic of encode, ring step and decode (backend.h). kFloat64 rounds
  // each stored result once; the bytes sent are the same. The ring baseline ignores it.
  Accumulation accumulation = Accumulation::kBuffer;
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
  // estimate of the sum (or average) over ranks. Collective. When it throws mid-protocol, the
  // buffer holds partial values and the transport may still have receives posted into this
  // object's workspace (and sends from the buffer): the object then leaks its workspace when
  // destroyed, unless the transport says nothing can still write into it (MayStillWrite: an
  // NCCL transport that aborted its communicator), and the buffer should outlive the transport.
  void Run(void* buffer);

  std::size_t count() const { return count_; }
  std::size_t m() const { return m_; }  // elements per vector, ceil(count / c)
  // Workspace held by this object, in bytes: (L + 2) m elements plus min(send_slots, segments)
  // send slots of the largest segment (WorkspaceLayout::bytes() in schedule.h), so at most
  // (1 + N/c) d elements + send_slots · segment_bytes.
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Bytes every run sends per rank: L m sizeof(T).
  std::uint64_t expected_bytes_per_run() const;
  const RunTimes& last_run_times() const { return times_; }

 private:
  Design design_;
  Transport& transport_;
  ComputeBackend& backend_;
  std::size_t count_, m_;
  AllReduceOptions options_;
  struct Plan;                  // segments and workspace layout, fixed at construction
  std::unique_ptr<Plan> plan_;  // (defined in coded_allreduce.cc: schedule.h is internal)
  std::size_t workspace_bytes_ = 0;
  void* workspace_ = nullptr;
  std::uint64_t id_ = 0;  // stamped on the back end with the matrices (ComputeBackend::holder)
  RunTimes times_;
  bool failed_ = false;  // a run threw mid-protocol: the workspace may be leaked (Run)
};

class RingAllReduce {
 public:
  // The arithmetic (the reduce-scatter's adds, the average) runs on `backend`, the same back end
  // type the coded engine uses, so the baseline pays the same kernels and memory space (CPU with
  // the MPI transport, CUDA with NCCL). `transport` and `backend` must outlive this object.
  RingAllReduce(Transport& transport, ComputeBackend& backend, std::size_t count,
                AllReduceOptions options = {});
  // Host memory: uses a CPU back end of its own.
  RingAllReduce(Transport& transport, std::size_t count, AllReduceOptions options = {});
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  void Run(void* buffer);

  std::size_t workspace_bytes() const { return scratch_bytes_; }
  // 2 (N-1) ceil-chunk bytes; exactly 2 (N-1) count/N sizeof(T) when N divides count.
  std::uint64_t expected_bytes_per_run() const;
  const RunTimes& last_run_times() const { return times_; }

 private:
  RingAllReduce(Transport& transport, std::unique_ptr<ComputeBackend> own, std::size_t count,
                AllReduceOptions options);
  void Init();
  void Pass(char* data, std::size_t chunk, char* tmp);

  std::unique_ptr<ComputeBackend> own_backend_;  // the host constructor's CPU back end
  Transport& transport_;
  ComputeBackend& backend_;
  std::size_t count_;
  AllReduceOptions options_;
  std::size_t scratch_bytes_ = 0;
  void* scratch_ = nullptr;
  RunTimes times_;
  bool failed_ = false;  // a run threw mid-protocol: the scratch may be leaked (as Coded)
};

}  // namespace cerar
