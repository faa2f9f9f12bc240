// Communicator creation with our deadline (nccl_bootstrap.h). NCCL's documented nonblocking
// initialisation: with ncclConfig_t::blocking = 0, ncclCommInitRankConfig returns at once
// (ncclSuccess or ncclInProgress) and ncclCommGetAsyncError reports ncclInProgress until the
// communicator is ready (then ncclSuccess) or has failed (an error; the communicator must then be
// aborted). The communicator stays nonblocking afterwards, which the transport handles
// (ncclInProgress from ncclGroupEnd and ncclAllGather is waited out).
#include "nccl_bootstrap.h"

#include <exception>
#include <sstream>
#include <string>

#include "../deadline.h"
#include "checks.h"
#include "nccl_transport_impl.h"

namespace cerar::cuda {
namespace {

std::string Who(int rank, int size) {
  return "NCCL bootstrap on rank " + std::to_string(rank) + " of " + std::to_string(size);
}

std::string Seconds(double seconds) {
  std::ostringstream s;
  s << seconds << " s";
  return s.str();
}

// Aborts (never destroys: ncclCommDestroy may wait for peers) and throws `message`.
[[noreturn]] void AbortAndThrow(ncclComm_t comm, const std::string& message) {
  CERAR_NCCL_REPORT_TEARDOWN(ncclCommAbort(comm));
  throw TransportError(message + " (the communicator is aborted)");
}

}  // namespace

ncclComm_t InitCommunicator(int rank, int size, const ncclUniqueId& id, double timeout_s) {
  const std::string who = Who(rank, size);
  if (!(timeout_s > 0))
    throw InvalidArgument(who + ": timeout " + Seconds(timeout_s) + ", expected > 0");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // return at once, so that our deadline bounds the bootstrap
  ncclComm_t comm = nullptr;
  const char* call = "ncclCommInitRankConfig(&comm, size, id, rank, &config)";
  const int started_line = __LINE__ + 1;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    const std::string message =
        who + ": " +
        FormatDeviceError("NCCL", call, __FILE__, started_line, static_cast<int>(started),
                          ncclGetErrorString(started)) +
        ": " + ncclGetLastError(comm);
    if (comm == nullptr) throw TransportError(message);
    AbortAndThrow(comm, message);
  }
  const auto deadline = detail::DeadlineAfter(detail::Clock::now(), timeout_s);
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    try {
      CERAR_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    } catch (const DeviceError& e) {
      AbortAndThrow(comm, who + ": " + e.what());
    }
    if (state == ncclSuccess) return comm;
    if (state != ncclInProgress)
      AbortAndThrow(comm, who + ": ncclCommInitRankConfig failed: asynchronous NCCL error " +
                              std::to_string(static_cast<int>(state)) + " (" +
                              ncclGetErrorString(state) + "): " + ncclGetLastError(comm));
    if (detail::Clock::now() >= deadline)
      AbortAndThrow(comm, who + ": ncclCommInitRankConfig did not complete within " +
                              Seconds(timeout_s) +
                              " (NcclTransportOptions::timeout_s; a peer that failed before "
                              "joining, or never called it)");
    detail::PauseBetweenPolls(polls);
  }
}

std::unique_ptr<Transport> BootstrapNcclTransport(int rank, int size, const ncclUniqueId& id,
                                                  cudaStream_t stream,
                                                  NcclTransportOptions options,
                                                  const AgreeOnFailure& agree) {
  ncclComm_t comm = nullptr;
  std::unique_ptr<NcclTransport> transport;
  std::exception_ptr failure;  // this rank's own; reported after the agreement
  try {
    comm = InitCommunicator(rank, size, id, options.timeout_s);  // aborted when it throws
    try {
      // Borrowed until every rank has agreed, so that a failure aborts it instead.
      transport = std::make_unique<NcclTransport>(comm, stream, /*owns_comm=*/false, options);
    } catch (...) {
      CERAR_NCCL_REPORT_TEARDOWN(ncclCommAbort(comm));
      throw;
    }
  } catch (...) {
    failure = std::current_exception();
  }
  const auto drop = [&] {
    if (!transport) return;
    transport.reset();  // borrowed: frees its buffers, leaves the communicator
    CERAR_NCCL_REPORT_TEARDOWN(ncclCommAbort(comm));
  };
  int failed_rank = -1;
  try {
    failed_rank = agree(failure != nullptr);
  } catch (...) {
    drop();
    if (failure) std::rethrow_exception(failure);  // this rank's own error says more
    throw;
  }
  if (failure) std::rethrow_exception(failure);
  if (failed_rank >= 0) {
    drop();
    throw TransportError(Who(rank, size) + ": rank " + std::to_string(failed_rank) +
                         " could not create its NCCL communicator or transport (its own error "
                         "says why); this rank's communicator is aborted");
  }
  transport->set_owns_comm(true);
  return transport;
}

}  // namespace cerar::cuda
