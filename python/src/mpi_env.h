#pragma once
// MPI for the Python package: initialised on first use (MPI_THREAD_SERIALIZED: the DDP hook may
// run on autograd's thread, never concurrently with another CERAR call) and finalised at exit by
// the package (cerar/_mpi.py registers it with atexit), so `mpirun` sees a clean exit. Only
// built with MPI.
#include <functional>
#include <memory>

#include "cerar/runtime/transport.h"

namespace cerar::python {

struct MpiState {
  bool initialized = false;  // MPI_Initialized
  bool finalized = false;    // MPI_Finalized
  bool owned = false;        // initialised by this package (then it also finalises)
  int rank = -1, size = 0;   // in MPI_COMM_WORLD, when initialised
};

MpiState MpiInit();        // idempotent
MpiState MpiStatus();
void MpiFinalize();        // only if this package initialised MPI; idempotent
// The library's MPI transport on a duplicate of MPI_COMM_WORLD (MpiInit first); its waits call
// `interrupt_check` (MpiTransportOptions::interrupt_check) every 0.1 s.
std::unique_ptr<Transport> CreateWorldMpiTransport(double timeout_s,
                                                   std::function<void()> interrupt_check);

}  // namespace cerar::python
