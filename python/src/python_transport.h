#pragma once
// A Transport whose exchanges are made by a Python object - in practice cerar.torch_transport,
// which posts torch.distributed isend/irecv on the job's process group, so a job launched by
// torchrun (no MPI) can run CERAR. The engine runs with the GIL released; each call takes the
// GIL for as long as the Python side needs it.
//
// The Python object provides
//   start(send_address, recv_address, nbytes) -> token  send to rank+1, receive from rank-1
//   wait(token)                                          both directions done
//   check_agreement(what, value)                         raise unless every rank passed value
// and raises on failure; the message reaches C++ as a TransportError (KeyboardInterrupt nested in
// it, and raised again to the caller).
#include <pybind11/pybind11.h>

#include <cstdint>
#include <deque>
#include <memory>

#include "cerar/runtime/transport.h"

namespace cerar::python {

std::unique_ptr<Transport> CreatePythonTransport(pybind11::object impl, int rank, int size);

}  // namespace cerar::python
