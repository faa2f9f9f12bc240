#pragma once
// The NCCL transport class, shared by the borrowed-communicator factory and the MPI bootstrap
// (which hands over a communicator the transport then owns).
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "cerar/runtime/cuda/nccl_transport.h"
#include "cerar/runtime/transport.h"
#include "exchange_events.h"

namespace cerar::cuda {

class NcclTransport final : public Transport {
 public:
  // owns_comm: destroy the communicator in the destructor (MPI bootstrap) or not (borrowed).
  NcclTransport(ncclComm_t comm, cudaStream_t stream, bool owns_comm,
                NcclTransportOptions options = {});
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const void* device_stream() const override { return stream_; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override;
  void Wait(Handle handle) override;
  void Finish() override;
  void CheckAgreement(const std::string& what, std::uint64_t value) override;
  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }
  // ncclCommAbort has stopped the kernels of every exchange still enqueued.
  bool MayStillWrite() const override { return !aborted_; }
  // The MPI bootstrap hands the communicator over once every rank has one (nccl_bootstrap.h).
  void set_owns_comm(bool owns) { owns_comm_ = owns; }

 private:
  // Polls until the stream reached `event`, against the deadline and the communicator's
  // asynchronous error; `what` names it in a failure.
  void Await(cudaEvent_t event, const std::string& what);
  // After ncclInProgress (a nonblocking communicator): polls until NCCL has enqueued the call.
  void Settle(const std::string& what);
  // ncclCommGetAsyncError: ncclSuccess or ncclInProgress; any error fails the transport.
  ncclResult_t AsyncState(const std::string& what);
  // Records the failure, aborts the communicator and throws TransportError(message).
  [[noreturn]] void Fail(const std::string& message);
  [[noreturn]] void FailCall(const std::string& where, const char* call, int line,
                             ncclResult_t status);
  void Abort(const std::string& message) noexcept;  // Fail without the throw
  void CheckUsable() const;
  std::string Exchange(Handle handle) const;  // "exchange 3 (send to rank 2, receive from rank 0)"
  std::string Seconds() const;
  void Release() noexcept;  // the destructor's work

  ncclComm_t comm_;
  cudaStream_t stream_;
  bool owns_comm_;
  NcclTransportOptions options_;
  int rank_ = 0, size_ = 0, device_ = 0;
  Handle issued_ = 0;  // handles 1 .. issued_ have been returned
  ExchangeEvents events_;
  cudaEvent_t check_event_ = nullptr;
  void* check_device_ = nullptr;            // CheckAgreement: [mine][all N values]
  std::uint64_t* check_host_ = nullptr;     // pinned: the copy back must not block the host
  std::uint64_t bytes_sent_ = 0;
  std::string failure_;  // the first failure's message; then every call throws
  bool aborted_ = false;
};

}  // namespace cerar::cuda
