// NCCL communicator bootstrap from MPI: rank 0 makes the unique id, MPI_Bcast shares it, every
// rank creates its communicator with a deadline and MPI_Allreduce agrees that all did
// (nccl_bootstrap.h).
#include "cerar/runtime/cuda/nccl_mpi.h"

#include <string>

#include "checks.h"
#include "nccl_bootstrap.h"

namespace cerar {
namespace {

void CheckMpi(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(status, text, &len);
  throw TransportError(std::string("NCCL bootstrap: ") + call + " failed: " +
                       std::string(text, std::size_t(len)));
}

}  // namespace

std::unique_ptr<Transport> CreateNcclTransportFromMpi(MPI_Comm mpi_comm, cudaStream_t stream,
                                                     NcclTransportOptions options) {
  int rank = 0, size = 0;
  CheckMpi(MPI_Comm_rank(mpi_comm, &rank), "MPI_Comm_rank");
  CheckMpi(MPI_Comm_size(mpi_comm, &size), "MPI_Comm_size");
  ncclUniqueId id{};
  // Rank 0's failure must not leave the others blocked in MPI_Bcast: broadcast a status first.
  int ok = 1;
  std::string error;
  if (rank == 0) {
    const ncclResult_t status = ncclGetUniqueId(&id);
    if (status != ncclSuccess) {
      ok = 0;
      error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(status);
    }
  }
  CheckMpi(MPI_Bcast(&ok, 1, MPI_INT, 0, mpi_comm), "MPI_Bcast(status)");
  if (!ok)
    throw TransportError("NCCL bootstrap on rank " + std::to_string(rank) + ": rank 0 " +
                         (error.empty() ? std::string("could not create the NCCL id") : error));
  CheckMpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_comm), "MPI_Bcast(ncclUniqueId)");
  // The agreement cannot hang where the Bcasts above did not: every rank that got here reaches it
  // (the part before it is bounded by timeout_s and catches every exception), and a rank that
  // never got here left the others in MPI_Bcast already. It keeps a rank whose communicator was
  // built from going on while a peer's was not (its first exchange would wait out the timeout).
  const cuda::AgreeOnFailure agree = [&](bool failed) {
    int lowest = failed ? rank : size;
    CheckMpi(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, mpi_comm),
             "MPI_Allreduce(failed rank)");
    return lowest < size ? lowest : -1;
  };
  return cuda::BootstrapNcclTransport(rank, size, id, stream, options, agree);
}

}  // namespace cerar
