#pragma once
// A Communicator: one transport (MPI, or the job's torch.distributed group through Python) plus
// the all-reduce objects that run on it, cached per (element count, dtype, design).
//
// Caching. A CodedAllReduce costs a collective agreement check and (1 + N/c) d elements of
// workspace to build, so the DDP hook keeps one per bucket size. Bucket sizes change once: DDP's
// iteration 0 puts the whole model in one bucket, and buckets are rebuilt after it. EndStep()
// therefore evicts an object once kEvictAfter EndStep() calls in a row found it unused: the
// iteration-0 object (1.5-2x the model's size) is gone after iteration 2. Not after the first
// unused call: every hook state on the communicator calls EndStep() after its own step, so with
// two hooked models (a GAN's two networks) each would evict the other's objects every step.
//
// Failures. Every error is a C++ exception (the extension turns them into Python exceptions);
// nothing calls MPI_Abort. After a TransportError the transport may have exchanges in flight and
// its peers may be anywhere in the protocol, so the communicator refuses further work, naming the
// first failure.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/transport.h"

namespace cerar::python {

struct CacheEntryInfo {
  std::size_t count = 0;
  std::string dtype;           // "f32" | "f64"
  std::string algorithm;       // "coded" | "ring"
  std::string accumulation;    // the coded object's (ToString(Accumulation)); "buffer" for ring
  std::size_t workspace_bytes = 0;
  std::uint64_t serial = 0;    // the communicator's count of objects built, when this one was
};

class Communicator {
 public:
  // check_every_call: every AllReduce first checks that all ranks make the same call (count,
  // dtype, op, design, accumulation), also when its object is cached. Off, only building an
  // object checks, and ranks that reuse different cached objects for one call compute garbage
  // (MPI and NCCL do not check either; torch's TORCH_DISTRIBUTED_DEBUG=DETAIL does). Costs one
  // small all-gather per call.
  Communicator(std::unique_ptr<Transport> transport, std::size_t segment_bytes,
               bool check_every_call = false);
  ~Communicator();

  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }

  // In place on `count` elements of `dtype` at `buffer` (host memory). With a design: the coded
  // all-reduce (CERAR) computing with `accumulation` (AllReduceOptions::accumulation: float32
  // buffers with float64 arithmetic or state, same bytes sent); without: the exact ring
  // all-reduce on the same transport, where `accumulation` must be kBuffer. `average` divides by
  // N. Collective. The caller must not hold the Python GIL.
  void AllReduce(void* buffer, std::size_t count, DType dtype, const Design* design, bool average,
                 Accumulation accumulation = Accumulation::kBuffer);

  // Collective: throws TransportError on every rank unless all ranks pass the same value.
  // `what` names the value in the message.
  void CheckAgreement(const std::string& what, std::uint64_t value);

  // Evicts the cached objects that kEvictAfter calls in a row found unused (see above). Local.
  void EndStep();
  static constexpr int kEvictAfter = 2;
  std::vector<CacheEntryInfo> CacheInfo() const;
  std::size_t CacheBytes() const;

  std::uint64_t bytes_sent() const { return transport_->bytes_sent(); }
  void ResetCounters() { transport_->ResetCounters(); }
  // The first TransportError, or "" while the communicator is usable. A copy, under its own
  // lock: another thread's failing all-reduce may be setting it (mutex_ is held for a whole
  // collective, which a caller holding the GIL must not wait for).
  std::string failure() const;

 private:
  struct Entry {
    std::unique_ptr<ComputeBackend> backend;  // one per coded object (it holds one design)
    std::unique_ptr<CodedAllReduce> coded;
    std::unique_ptr<RingAllReduce> ring;
    bool used = false;
    int idle = 0;              // EndStep() calls in a row that found it unused
    std::uint64_t serial = 0;  // see CacheEntryInfo::serial
  };
  // (count, dtype, op, design fingerprint; 0 = exact ring, accumulation)
  using Key = std::tuple<std::size_t, int, int, std::uint64_t, int>;
  Entry& Lookup(std::size_t count, DType dtype, const Design* design, bool average,
                Accumulation accumulation);

  std::unique_ptr<Transport> transport_;
  std::size_t segment_bytes_;
  bool check_every_call_;
  std::map<Key, Entry> cache_;
  std::uint64_t builds_ = 0;
  std::string failure_;       // written under mutex_ and failure_mutex_
  mutable std::mutex mutex_;  // one collective at a time
  mutable std::mutex failure_mutex_;
  void SetFailure(const std::string& what);
};

}  // namespace cerar::python
