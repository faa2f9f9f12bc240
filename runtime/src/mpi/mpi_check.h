#pragma once
// Every MPI call in CERAR goes through CERAR_MPI_CHECK: a failure throws TransportError with the
// call text, file:line, the error code and MPI's own message. Needs MPI_ERRORS_RETURN on the
// communicator (MPI's default handler aborts before we could report anything).
#include <mpi.h>

#include <string>

#include "cerar/errors.h"

namespace cerar::detail {

[[noreturn]] inline void ThrowMpiError(const char* call, const char* file, int line, int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) text[0] = 0;
  std::string f = file;
  const auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  throw TransportError("MPI call " + std::string(call) + " failed at " + f + ":" +
                       std::to_string(line) + ": error " + std::to_string(code) + " (" + text +
                       ")");
}

}  // namespace cerar::detail

#define CERAR_MPI_CHECK(call)                                                          \
  do {                                                                                 \
    const int cerar_mpi_rc_ = (call);                                                  \
    if (cerar_mpi_rc_ != MPI_SUCCESS)                                                  \
      ::cerar::detail::ThrowMpiError(#call, __FILE__, __LINE__, cerar_mpi_rc_);        \
  } while (0)
