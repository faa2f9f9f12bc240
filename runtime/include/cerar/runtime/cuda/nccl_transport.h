#pragma once
// NCCL transport: each exchange is ncclSend to rank+1 and ncclRecv from rank-1 inside
// ncclGroupStart/End, enqueued on the caller's stream. StartExchange returns at once and Wait is
// a no-op for the host: the exchange is ordered on the stream with the back end's kernels, so a
// whole all-reduce runs with no host synchronisation. Buffers are device memory.
//
// CheckAgreement is collective and synchronises the stream (it runs before a run, not inside).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "cerar/runtime/transport.h"

namespace cerar {

// Borrows an existing communicator the caller owns (it is not destroyed by the transport); the
// communicator and the stream must outlive the transport.
// The communicator's device must be current when the transport is used.
std::unique_ptr<Transport> CreateNcclTransport(ncclComm_t comm, cudaStream_t stream);

}  // namespace cerar
