#pragma once
// NCCL transport bootstrapped from MPI: rank 0 creates the ncclUniqueId, MPI_Bcast shares it,
// every rank creates a nonblocking communicator (ncclCommInitRankConfig) on the device that is
// current and waits for it at most options.timeout_s, then the ranks agree (MPI_Allreduce) that
// every one has its communicator and transport. On the deadline, an NCCL error or a peer's
// failure, every rank throws TransportError naming the rank (and the call and deadline, or the
// rank that failed) with its communicator aborted. The transport owns (and destroys) the
// communicator; its failures and timeout are those of nccl_transport.h. Collective over
// `mpi_comm`. Built only with MPI (cerar_runtime_cuda_mpi).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <memory>

#include "cerar/runtime/cuda/nccl_transport.h"
#include "cerar/runtime/transport.h"

namespace cerar {

std::unique_ptr<Transport> CreateNcclTransportFromMpi(MPI_Comm mpi_comm, cudaStream_t stream,
                                                     NcclTransportOptions options = {});

}  // namespace cerar
