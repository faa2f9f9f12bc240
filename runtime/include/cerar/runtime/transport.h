#pragma once
// A Transport moves bytes around a directed ring: each rank sends only to rank+1 and receives
// only from rank-1 (PROTOCOL.md §1). It holds no algorithm; the protocol engine and the exact
// ring all-reduce both run on it, so comparisons measure the algorithm, not the plumbing.
#include <cstddef>
#include <cstdint>
#include <string>

namespace cerar {

enum class DType { kFloat32, kFloat64, kBFloat16, kFloat16 };
// The one vocabulary of element types: names "f32", "f64", "bf16", "f16" (ToString and ParseDType
// are inverses) and sizes in bytes. Both throw InvalidArgument for a value outside the enum;
// ParseDType names the text and the accepted names.
std::size_t SizeOf(DType dtype);
std::string ToString(DType dtype);
DType ParseDType(const std::string& name);

// Where buffers live: host memory, or device memory on the caller's stream.
enum class MemorySpace { kHost, kDevice };

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual MemorySpace memory_space() const { return MemorySpace::kHost; }
  // The cudaStream_t a device transport enqueues on (nullptr: the legacy stream, or a host
  // transport). The engines require it to be the device back end's stream.
  virtual const void* device_stream() const { return nullptr; }

  // Starts sending `bytes` from `send` to rank+1 and receiving `bytes` into `recv` from rank-1.
  // Both buffers must stay valid and untouched until Wait(handle). Handles complete in order.
  // Stream-ordered transports (NCCL) enqueue the exchange; their Wait is a no-op for the host.
  using Handle = std::uint64_t;
  virtual Handle StartExchange(const void* send, void* recv, std::size_t bytes) = 0;
  virtual void Wait(Handle handle) = 0;

  // Blocks until every exchange started so far is complete, or throws TransportError when one
  // is not within the transport's timeout (or a peer failed). The engines call it at the end of
  // a run, before waiting for the back end: a stream-ordered transport's Wait does not block, and
  // a device sync has no deadline. The default does nothing (Wait has waited).
  virtual void Finish() {}

  // Whether exchanges started earlier may still write into their receive buffers. Asked after a
  // failed run: the engines then keep their buffers (never freed) unless it says no. MPI: yes (a
  // matched receive cannot be cancelled); NCCL after it aborted its communicator: no.
  virtual bool MayStillWrite() const { return true; }

  // Lets the transport move bytes of the exchanges in flight, without blocking. A transport whose
  // bytes move only inside its own calls (MPI over TCP without a progress thread: Open MPI's
  // default) idles the link while the caller computes; the engines call Progress between blocks
  // of their arithmetic (a few hundred microseconds apart) so the link stays busy. Cheap; the
  // default does nothing (transports that progress on their own).
  virtual void Progress() {}

  // Collective check before a run: every rank passes its value for `what`; throws
  // TransportError on every rank, naming the rank and both values, when they differ.
  virtual void CheckAgreement(const std::string& what, std::uint64_t value) = 0;

  // Bytes this rank has sent since construction (or the last ResetCounters).
  virtual std::uint64_t bytes_sent() const = 0;
  virtual void ResetCounters() = 0;
};

}  // namespace cerar
