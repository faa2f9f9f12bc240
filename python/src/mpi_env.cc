// MPI initialisation, finalisation and the world transport for the Python package (mpi_env.h).
#include "mpi_env.h"

#include <mpi.h>

#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/mpi_transport.h"

namespace cerar::python {
namespace {

bool g_owned = false;

void Check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) text[0] = 0;
  throw TransportError(std::string("MPI call ") + call + " failed: error " + std::to_string(rc) +
                       " (" + text + ")");
}

}  // namespace

MpiState MpiStatus() {
  MpiState s;
  int flag = 0;
  Check(MPI_Initialized(&flag), "MPI_Initialized");
  s.initialized = flag;
  Check(MPI_Finalized(&flag), "MPI_Finalized");
  s.finalized = flag;
  s.owned = g_owned;
  if (s.initialized && !s.finalized) {
    Check(MPI_Comm_rank(MPI_COMM_WORLD, &s.rank), "MPI_Comm_rank");
    Check(MPI_Comm_size(MPI_COMM_WORLD, &s.size), "MPI_Comm_size");
  }
  return s;
}

MpiState MpiInit() {
  MpiState s = MpiStatus();
  if (s.finalized) throw TransportError("MPI was already finalised in this process");
  if (!s.initialized) {
    int provided = 0;
    Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    g_owned = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw TransportError("MPI provides thread level " + std::to_string(provided) +
                           ", CERAR needs MPI_THREAD_SERIALIZED (" +
                           std::to_string(MPI_THREAD_SERIALIZED) + ")");
    }
    s = MpiStatus();
  }
  return s;
}

void MpiFinalize() {
  const MpiState s = MpiStatus();
  if (s.owned && s.initialized && !s.finalized) Check(MPI_Finalize(), "MPI_Finalize");
}

std::unique_ptr<Transport> CreateWorldMpiTransport(double timeout_s,
                                                   std::function<void()> interrupt_check) {
  MpiInit();
  // MPI initialised by someone else (mpi4py, another library) may run below the level the DDP
  // hook needs: it calls MPI from backward()'s threads, one at a time.
  int provided = 0;
  Check(MPI_Query_thread(&provided), "MPI_Query_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    const char* name = provided == MPI_THREAD_SINGLE     ? "MPI_THREAD_SINGLE"
                       : provided == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                                         : "unknown";
    throw TransportError(std::string("MPI was initialised (not by cerar) with thread level ") +
                         name + " (" + std::to_string(provided) +
                         "); the MPI communicator needs MPI_THREAD_SERIALIZED or higher: "
                         "initialise MPI with MPI_Init_thread at that level (mpi4py: "
                         "mpi4py.rc.thread_level = \"serialized\" before importing MPI), or let "
                         "cerar initialise it");
  }
  MpiTransportOptions options;
  options.timeout_s = timeout_s;
  options.interrupt_check = std::move(interrupt_check);
  return CreateMpiTransport(MPI_COMM_WORLD, options);
}

}  // namespace cerar::python
