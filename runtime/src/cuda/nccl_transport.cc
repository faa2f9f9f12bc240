// NCCL transport: stream-ordered ring exchange (ncclSend to rank+1, ncclRecv from rank-1), whose
// completion the host polls against a deadline (nccl_transport.h).
#include "nccl_transport_impl.h"

#include <cstdio>
#include <sstream>
#include <vector>

#include "../deadline.h"
#include "checks.h"
#include "device_buffer.h"

namespace cerar {
namespace cuda {

// An NCCL call on the communicator inside an operation: a failure fails the transport.
#define CERAR_NCCL_COMM_CHECK(where, call)                                                \
  do {                                                                                    \
    const ncclResult_t cerar_status_ = (call);                                            \
    if (cerar_status_ != ncclSuccess) FailCall(where, #call, __LINE__, cerar_status_);    \
  } while (0)

namespace {

// The constructor's queries: a failure is the communicator's (TransportError, as in operations),
// but nothing is enqueued yet, so nothing is aborted.
void CheckQuery(ncclComm_t comm, ncclResult_t status, const char* call, int line) {
  if (status != ncclSuccess)
    throw TransportError("NCCL transport: " +
                         FormatDeviceError("NCCL", call, __FILE__, line, static_cast<int>(status),
                                           ncclGetErrorString(status)) +
                         ": " + ncclGetLastError(comm));
}

}  // namespace

NcclTransport::NcclTransport(ncclComm_t comm, cudaStream_t stream, bool owns_comm,
                             NcclTransportOptions options)
    : comm_(comm), stream_(stream), owns_comm_(owns_comm), options_(options) {
  if (comm_ == nullptr) throw InvalidArgument("NCCL transport: the communicator is null");
  if (!(options_.timeout_s > 0))
    throw InvalidArgument("NCCL transport: timeout " + Seconds() + ", expected > 0");
  CheckQuery(comm_, ncclCommUserRank(comm_, &rank_), "ncclCommUserRank(comm, &rank)", __LINE__);
  CheckQuery(comm_, ncclCommCount(comm_, &size_), "ncclCommCount(comm, &size)", __LINE__);
  CheckQuery(comm_, ncclCommCuDevice(comm_, &device_), "ncclCommCuDevice(comm, &device)",
             __LINE__);
  DeviceGuard guard(device_);
  // CheckAgreement's buffers, once: a cudaFree per check would synchronise the device.
  try {
    check_event_ = CreatePollEvent();
    CERAR_CUDA_CHECK(cudaMalloc(&check_device_, sizeof(std::uint64_t) * (size_ + 1)));
    void* host = nullptr;
    CERAR_CUDA_CHECK(cudaMallocHost(&host, sizeof(std::uint64_t) * (size_ + 1)));
    check_host_ = static_cast<std::uint64_t*>(host);
  } catch (...) {
    if (check_device_) CERAR_CUDA_REPORT(cudaFree(check_device_));
    if (check_event_) CERAR_CUDA_REPORT(cudaEventDestroy(check_event_));
    throw;
  }
}

NcclTransport::~NcclTransport() { Release(); }

void NcclTransport::Release() noexcept {
  try {
    DeviceGuard guard(device_);
    if (failure_.empty()) {
      try {  // enqueued exchanges use the communicator: wait for them, but not forever
        Finish();
      } catch (const std::exception& e) {  // the communicator is aborted
        std::fprintf(stderr, "cerar: ignored in cleanup: %s\n", e.what());
      }
    }
    // After an abort the communicator is gone (ncclCommAbort frees it); the few bytes of the
    // check buffers are kept rather than risk a cudaFree (a device sync) on a broken device.
    if (aborted_) return;
    CERAR_CUDA_REPORT(cudaEventDestroy(check_event_));
    CERAR_CUDA_REPORT(cudaFree(check_device_));
    CERAR_CUDA_REPORT(cudaFreeHost(check_host_));
    if (owns_comm_) CERAR_NCCL_REPORT_TEARDOWN(ncclCommDestroy(comm_));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cerar: ignored in cleanup: NCCL transport: %s\n", e.what());
  }
}

Transport::Handle NcclTransport::StartExchange(const void* send, void* recv, std::size_t bytes) {
  CheckUsable();
  if (bytes > 0 && (send == nullptr || recv == nullptr))
    throw InvalidArgument(std::string("NCCL transport StartExchange: ") +
                          (send ? "recv" : "send") + " buffer is null with bytes = " +
                          std::to_string(bytes));
  if (bytes > 0) {
    DeviceGuard guard(device_);
    const std::string where = Exchange(issued_ + 1);
    // Send and receive in one group so neither blocks the other (and N = 1 sends to itself).
    CERAR_NCCL_COMM_CHECK(where, ncclGroupStart());
    const int sent_line = __LINE__ + 1;
    const ncclResult_t sent = ncclSend(send, bytes, ncclUint8, (rank_ + 1) % size_, comm_, stream_);
    const int received_line = __LINE__ + 3;
    const ncclResult_t received =
        sent == ncclSuccess
            ? ncclRecv(recv, bytes, ncclUint8, (rank_ + size_ - 1) % size_, comm_, stream_)
            : ncclSuccess;
    // Ended whatever failed: NCCL then discards the group (no lone send is launched).
    const int ended_line = __LINE__ + 1;
    const ncclResult_t ended = ncclGroupEnd();
    if (sent != ncclSuccess) FailCall(where, "ncclSend(send, ...)", sent_line, sent);
    if (received != ncclSuccess) FailCall(where, "ncclRecv(recv, ...)", received_line, received);
    if (ended == ncclInProgress)  // a nonblocking communicator, still enqueueing
      Settle(where);
    else if (ended != ncclSuccess)
      FailCall(where, "ncclGroupEnd()", ended_line, ended);
    try {
      events_.Record(issued_ + 1, stream_);
    } catch (const DeviceError& e) {  // enqueued, but no longer tracked
      Abort(e.what());
      throw;
    }
  }
  bytes_sent_ += bytes;
  return ++issued_;
}

void NcclTransport::Wait(Handle handle) {
  CheckUsable();
  if (handle == 0 || handle > issued_)
    throw InvalidArgument("NCCL transport Wait: handle " + std::to_string(handle) +
                          " was never returned by StartExchange (last issued " +
                          std::to_string(issued_) + ")");
  // Stream-ordered: nothing to wait for on the host. A peer's failure is reported now, though.
  DeviceGuard guard(device_);
  try {
    events_.PopCompleted();
  } catch (const DeviceError& e) {
    Abort(e.what());
    throw;
  }
  AsyncState(Exchange(handle));
}

void NcclTransport::Finish() {
  CheckUsable();
  DeviceGuard guard(device_);
  for (; !events_.empty(); events_.PopFront())
    Await(events_.front_event(), Exchange(events_.front_handle()));
}

void NcclTransport::CheckAgreement(const std::string& what, std::uint64_t value) {
  CheckUsable();
  DeviceGuard guard(device_);
  const std::string where = "the check of " + what;
  // All-gather every rank's value (N * 8 bytes) so a mismatch can name the ranks and values.
  auto* device = static_cast<std::uint64_t*>(check_device_);
  const std::size_t n = static_cast<std::size_t>(size_);
  check_host_[0] = value;
  try {
    CERAR_CUDA_CHECK(cudaMemcpyAsync(device, check_host_, sizeof value, cudaMemcpyHostToDevice,
                                     stream_));
    const int gathered_line = __LINE__ + 1;
    const ncclResult_t gathered = ncclAllGather(device, device + 1, 1, ncclUint64, comm_, stream_);
    if (gathered == ncclInProgress)
      Settle(where);
    else if (gathered != ncclSuccess)
      FailCall(where, "ncclAllGather(...)", gathered_line, gathered);
    CERAR_CUDA_CHECK(cudaMemcpyAsync(check_host_ + 1, device + 1, sizeof value * n,
                                     cudaMemcpyDeviceToHost, stream_));
    CERAR_CUDA_CHECK(cudaEventRecord(check_event_, stream_));
  } catch (const DeviceError& e) {
    Abort(e.what());
    throw;
  }
  Await(check_event_, where);
  events_.PopAll();  // the stream is past every exchange enqueued before the check
  for (int r = 0; r < size_; ++r) {
    const std::uint64_t theirs = check_host_[1 + r];
    if (theirs != value)
      throw TransportError("ranks disagree on " + what + ": rank " + std::to_string(rank_) +
                           " has " + std::to_string(value) + ", rank " + std::to_string(r) +
                           " has " + std::to_string(theirs));
  }
}

void NcclTransport::Await(cudaEvent_t event, const std::string& what) {
  const auto deadline = detail::DeadlineAfter(detail::Clock::now(), options_.timeout_s);
  for (int polls = 0;; ++polls) {
    bool done = false;
    try {
      done = EventDone(event);
    } catch (const DeviceError& e) {
      Abort(e.what());
      throw;
    }
    if (done) return;
    AsyncState(what);
    if (detail::Clock::now() >= deadline)
      Fail("rank " + std::to_string(rank_) + ": " + what + " did not complete within " +
           Seconds() + " (NCCL transport; the communicator is aborted)");
    detail::PauseBetweenPolls(polls);
  }
}

void NcclTransport::Settle(const std::string& what) {
  const auto deadline = detail::DeadlineAfter(detail::Clock::now(), options_.timeout_s);
  for (int polls = 0; AsyncState(what) == ncclInProgress; ++polls) {
    if (detail::Clock::now() >= deadline)
      Fail("rank " + std::to_string(rank_) + ": NCCL did not enqueue " + what + " within " +
           Seconds() + " (the communicator is aborted)");
    detail::PauseBetweenPolls(polls);
  }
}

ncclResult_t NcclTransport::AsyncState(const std::string& what) {
  ncclResult_t state = ncclSuccess;
  CERAR_NCCL_COMM_CHECK(what, ncclCommGetAsyncError(comm_, &state));
  if (state != ncclSuccess && state != ncclInProgress)
    Fail("rank " + std::to_string(rank_) + ": asynchronous NCCL error " +
         std::to_string(static_cast<int>(state)) + " (" + ncclGetErrorString(state) +
         "): " + ncclGetLastError(comm_) + ", in " + what +
         " (NCCL transport; the communicator is aborted)");
  return state;
}

void NcclTransport::FailCall(const std::string& where, const char* call, int line,
                             ncclResult_t status) {
  Fail("rank " + std::to_string(rank_) + ", " + where + ": " +
       FormatDeviceError("NCCL", call, __FILE__, line, static_cast<int>(status),
                         ncclGetErrorString(status)) +
       ": " + ncclGetLastError(comm_) + " (the communicator is aborted)");
}

void NcclTransport::Fail(const std::string& message) {
  Abort(message);
  throw TransportError(message);
}

// The ranks are now anywhere in the protocol: a later exchange would pair with a peer's
// earlier one. ncclCommAbort stops the kernels of the operations still enqueued, so that the
// stream (and the device syncs behind it) can finish, and the transport refuses further work.
void NcclTransport::Abort(const std::string& message) noexcept {
  if (aborted_) return;
  aborted_ = true;
  try {
    failure_ = message;
  } catch (...) {
    failure_ = "failed";  // short enough for the small-string buffer
  }
  CERAR_NCCL_REPORT_TEARDOWN(ncclCommAbort(comm_));
}

void NcclTransport::CheckUsable() const {
  if (!failure_.empty())
    throw TransportError("NCCL transport of rank " + std::to_string(rank_) +
                         ": unusable after an earlier failure: " + failure_);
}

std::string NcclTransport::Exchange(Handle handle) const {
  return "exchange " + std::to_string(handle) + " (send to rank " +
         std::to_string((rank_ + 1) % size_) + ", receive from rank " +
         std::to_string((rank_ + size_ - 1) % size_) + ")";
}

std::string NcclTransport::Seconds() const {
  std::ostringstream s;
  s << options_.timeout_s << " s";
  return s.str();
}

}  // namespace cuda

std::unique_ptr<Transport> CreateNcclTransport(ncclComm_t comm, cudaStream_t stream,
                                               NcclTransportOptions options) {
  return std::make_unique<cuda::NcclTransport>(comm, stream, /*owns_comm=*/false, options);
}

}  // namespace cerar
