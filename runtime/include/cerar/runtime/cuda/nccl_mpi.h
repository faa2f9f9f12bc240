#pragma once
// NCCL transport bootstrapped from MPI: rank 0 creates the ncclUniqueId, MPI_Bcast shares it,
// every rank calls ncclCommInitRank on the device that is current. The transport owns (and
// destroys) that communicator; its failures and timeout are those of nccl_transport.h.
// Collective over `mpi_comm`. Built only with MPI (cerar_runtime_cuda_mpi).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <memory>

#include "cerar/runtime/cuda/nccl_transport.h"
#include "cerar/runtime/transport.h"

namespace cerar {

std::unique_ptr<Transport> CreateNcclTransportFromMpi(MPI_Comm mpi_comm, cudaStream_t stream,
                                                     NcclTransportOptions options = {});

}  // namespace cerar
