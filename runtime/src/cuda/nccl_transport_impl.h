#pragma once
// The NCCL transport class, shared by the borrowed-communicator factory and the MPI bootstrap
// (which hands over a communicator the transport then owns).
#include <nccl.h>

#include <memory>
#include <string>

#include "cerar/runtime/transport.h"

namespace cerar::cuda {

class NcclTransport final : public Transport {
 public:
  // owns_comm: destroy the communicator in the destructor (MPI bootstrap) or not (borrowed).
  NcclTransport(ncclComm_t comm, cudaStream_t stream, bool owns_comm);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const void* device_stream() const override { return stream_; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override;
  void Wait(Handle handle) override;
  void CheckAgreement(const std::string& what, std::uint64_t value) override;
  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }

 private:
  void ThrowIfAsyncError(const char* where);

  ncclComm_t comm_;
  cudaStream_t stream_;
  bool owns_comm_;
  int rank_ = 0, size_ = 0, device_ = 0;
  Handle issued_ = 0;  // handles 1 .. issued_ have been returned
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace cerar::cuda
