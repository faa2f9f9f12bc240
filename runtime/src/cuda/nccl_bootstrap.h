#pragma once
// Communicator creation with a deadline, shared by the MPI bootstrap (nccl_mpi.cc) and the
// fake-backed tests (which have no MPI): the rank exchange of the unique id is the caller's,
// everything after it is here.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>

#include "cerar/runtime/cuda/nccl_transport.h"
#include "cerar/runtime/transport.h"

namespace cerar::cuda {

// Creates this rank's communicator nonblocking (ncclCommInitRankConfig with blocking = 0) and
// polls ncclCommGetAsyncError until it leaves ncclInProgress or `timeout_s` passes: a blocking
// ncclCommInitRank waits in NCCL's bootstrap forever for a peer that failed before joining. On
// the deadline or an NCCL error it aborts the communicator (ncclCommAbort) and throws
// TransportError naming the rank, the call and the deadline. Creates on the current device.
ncclComm_t InitCommunicator(int rank, int size, const ncclUniqueId& id, double timeout_s);

// Collective over the ranks being bootstrapped: every rank passes whether its own part failed
// and gets the lowest rank that failed, or -1. Every rank calls it exactly once.
using AgreeOnFailure = std::function<int(bool failed)>;

// InitCommunicator, then the transport on `stream` (which owns the communicator), then `agree`:
// a rank whose own part succeeded still throws TransportError, naming the rank that failed,
// when a peer's did not, so that no rank goes on with a communicator a peer does not have. Each
// rank's part before `agree` is bounded by `timeout_s` and catches every exception, so every
// rank reaches `agree`. On any failure the communicator is aborted, not destroyed
// (ncclCommDestroy may wait for peers).
std::unique_ptr<Transport> BootstrapNcclTransport(int rank, int size, const ncclUniqueId& id,
                                                  cudaStream_t stream,
                                                  NcclTransportOptions options,
                                                  const AgreeOnFailure& agree);

}  // namespace cerar::cuda
