#pragma once
// NCCL transport: each exchange is ncclSend to rank+1 and ncclRecv from rank-1 inside
// ncclGroupStart/End, enqueued on the caller's stream. StartExchange returns at once and Wait
// does not block: the exchange is ordered on the stream with the back end's kernels, so a whole
// all-reduce runs with no host synchronisation until the engine's Finish. Buffers are device
// memory; the transport switches to the communicator's device for each call.
//
// Failures (docs/cuda.md, "Failures and timeouts"): Finish and CheckAgreement poll an event per
// exchange (cudaEventQuery) and ncclCommGetAsyncError against `timeout_s`. On the deadline or an
// NCCL error the transport aborts the communicator (ncclCommAbort, which stops its kernels) and
// throws TransportError naming the rank, the exchange and the peers; every later call throws
// "NCCL transport of rank r: unusable after an earlier failure: ...". CUDA errors stay
// DeviceError. Blocking and nonblocking communicators both work (ncclInProgress is waited out).
//
// CheckAgreement is collective and waits for the stream (it runs before a run, not inside).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "cerar/runtime/transport.h"

namespace cerar {

struct NcclTransportOptions {
  // Longest wait for an exchange or a check (as MpiTransportOptions), and for the communicator's
  // initialisation in CreateNcclTransportFromMpi.
  double timeout_s = 60;
};

// Borrows a communicator the caller owns: the transport never destroys it, but a failure aborts
// it (ncclCommAbort frees it; the owner must not use or destroy it afterwards). The communicator
// and the stream must outlive the transport.
std::unique_ptr<Transport> CreateNcclTransport(ncclComm_t comm, cudaStream_t stream,
                                               NcclTransportOptions options = {});

}  // namespace cerar
