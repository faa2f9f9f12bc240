// NCCL transport: stream-ordered ring exchange (ncclSend to rank+1, ncclRecv from rank-1).
#include "cerar/runtime/cuda/nccl_transport.h"

#include <algorithm>
#include <vector>

#include "checks.h"
#include "device_buffer.h"
#include "nccl_transport_impl.h"

namespace cerar {
namespace cuda {

NcclTransport::NcclTransport(ncclComm_t comm, cudaStream_t stream, bool owns_comm)
    : comm_(comm), stream_(stream), owns_comm_(owns_comm) {
  if (comm_ == nullptr) throw InvalidArgument("NCCL transport: the communicator is null");
  CERAR_NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
  CERAR_NCCL_CHECK(ncclCommCount(comm_, &size_));
  CERAR_NCCL_CHECK(ncclCommCuDevice(comm_, &device_));
}

NcclTransport::~NcclTransport() {
  if (!owns_comm_) return;
  // Exchanges still enqueued reference the communicator.
  CERAR_CUDA_REPORT(cudaStreamSynchronize(stream_));
  CERAR_NCCL_REPORT(ncclCommDestroy(comm_));
}

Transport::Handle NcclTransport::StartExchange(const void* send, void* recv, std::size_t bytes) {
  if (bytes > 0 && (send == nullptr || recv == nullptr))
    throw InvalidArgument(std::string("NCCL transport StartExchange: ") +
                          (send ? "recv" : "send") + " buffer is null with bytes = " +
                          std::to_string(bytes));
  if (bytes > 0) {
    DeviceGuard guard(device_);
    const int next = (rank_ + 1) % size_;
    const int prev = (rank_ + size_ - 1) % size_;
    // Send and receive in one group so neither blocks the other (and N = 1 sends to itself).
    CERAR_NCCL_CHECK(ncclGroupStart());
    try {
      CERAR_NCCL_CHECK(ncclSend(send, bytes, ncclUint8, next, comm_, stream_));
      CERAR_NCCL_CHECK(ncclRecv(recv, bytes, ncclUint8, prev, comm_, stream_));
    } catch (...) {
      CERAR_NCCL_REPORT(ncclGroupEnd());
      throw;
    }
    CERAR_NCCL_CHECK(ncclGroupEnd());
  }
  bytes_sent_ += bytes;
  return ++issued_;
}

void NcclTransport::Wait(Handle handle) {
  // Stream-ordered: the exchange completes before any later work on the stream; nothing to do
  // on the host. Only catch handles that were never issued.
  if (handle == 0 || handle > issued_)
    throw InvalidArgument("NCCL transport Wait: handle " + std::to_string(handle) +
                          " was never returned by StartExchange (last issued " +
                          std::to_string(issued_) + ")");
}

void NcclTransport::ThrowIfAsyncError(const char* where) {
  ncclResult_t async = ncclSuccess;
  CERAR_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclSuccess)
    throw TransportError(std::string("NCCL transport ") + where + " on rank " +
                         std::to_string(rank_) + ": asynchronous NCCL error " +
                         std::to_string(static_cast<int>(async)) + " (" +
                         ncclGetErrorString(async) + "): " + ncclGetLastError(comm_));
}

void NcclTransport::CheckAgreement(const std::string& what, std::uint64_t value) {
  DeviceGuard guard(device_);
  // All-gather every rank's value (N * 8 bytes) so a mismatch can name the ranks and values.
  DeviceBuffer mine(sizeof value), all(sizeof value * static_cast<std::size_t>(size_));
  std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
  CERAR_CUDA_CHECK(cudaMemcpyAsync(mine.get(), &value, sizeof value, cudaMemcpyHostToDevice, stream_));
  CERAR_NCCL_CHECK(ncclAllGather(mine.get(), all.get(), 1, ncclUint64, comm_, stream_));
  CERAR_CUDA_CHECK(cudaMemcpyAsync(values.data(), all.get(), sizeof value * values.size(),
                                   cudaMemcpyDeviceToHost, stream_));
  CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
  ThrowIfAsyncError("CheckAgreement");
  for (int r = 0; r < size_; ++r) {
    if (values[std::size_t(r)] != value) {
      throw TransportError("ranks disagree on " + what + ": rank " + std::to_string(rank_) +
                           " has " + std::to_string(value) + ", rank " + std::to_string(r) +
                           " has " + std::to_string(values[std::size_t(r)]));
    }
  }
}

}  // namespace cuda

std::unique_ptr<Transport> CreateNcclTransport(ncclComm_t comm, cudaStream_t stream) {
  return std::make_unique<cuda::NcclTransport>(comm, stream, /*owns_comm=*/false);
}

}  // namespace cerar
