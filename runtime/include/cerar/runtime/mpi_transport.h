#pragma once
// MPI transport (OpenMPI): each exchange is MPI_Isend to rank+1 and MPI_Irecv from rank-1 on a
// private duplicate of the caller's communicator. Built only with MPI (library cerar_runtime_mpi).
//
// What MPI gives: by default every error is fatal (MPI_ERRORS_ARE_FATAL) and a dead peer makes a
// blocking wait hang until the launcher notices, if it ever does. What this transport adds: the
// duplicate communicator uses MPI_ERRORS_RETURN and every MPI call is checked
// (CERAR_MPI_CHECK, message with the call text and file:line); waits poll with MPI_Test against a
// deadline, so a silent peer gives TransportError("rank 2: no data from rank 1 for 10 s") instead
// of a hang. Programs catch it, print it and call AbortOnError / MPI_Abort so the whole job ends.
//
// Interruption: a wait that polls can also ask the caller, through `interrupt_check`, whether to
// give up (a Python program's Ctrl-C: the binding runs the interpreter's signal handlers there).
#include <mpi.h>

#include <exception>
#include <functional>
#include <memory>

#include "cerar/runtime/transport.h"

namespace cerar {

struct MpiTransportOptions {
  double timeout_s = 60;  // longest wait for a peer before TransportError
  int tag = 0x0CEA;       // one tag: MPI keeps messages with the same (source, tag) in order
  // Optional. Called from the waiting thread (so never concurrently with this transport's MPI
  // calls) about every `interrupt_every_s` seconds while Wait or CheckAgreement polls; it must
  // not call MPI. Whatever it throws ends the wait: the transport fails as on a timeout (cancels
  // its receives, refuses further work) and throws TransportError("rank R: interrupted while
  // ...") with the check's exception nested in it (std::throw_with_nested), so a caller can
  // rethrow the original (std::rethrow_if_nested).
  std::function<void()> interrupt_check;
  double interrupt_every_s = 0.1;  // > 0
};

// Collective over `comm` (duplicates it).
std::unique_ptr<Transport> CreateMpiTransport(MPI_Comm comm, MpiTransportOptions options = {});

// Prints "cerar: <what>" to stderr with the rank and calls MPI_Abort(MPI_COMM_WORLD, code):
// for a program's top-level catch, so one failing rank ends the whole job.
[[noreturn]] void AbortOnError(const std::exception& error, int code = 2);

}  // namespace cerar
