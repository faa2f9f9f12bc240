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
  MpiTransportOptions options;
  options.timeout_s = timeout_s;
  options.interrupt_check = std::move(interrupt_check);
  return CreateMpiTransport(MPI_COMM_WORLD, options);
}

}  // namespace cerar::python
