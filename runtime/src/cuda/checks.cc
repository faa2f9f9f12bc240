// Formatting and throwing for the CERAR_*_CHECK macros (checks.h).
#include "checks.h"

#include <cstdio>
#include <cstring>

namespace cerar::cuda {
namespace {

// file:line with the directories dropped: the basename names the file well enough and keeps
// messages independent of where the tree was built.
const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

std::string FormatDeviceError(const char* library, const char* call, const char* file, int line,
                              int code, const char* message) {
  std::string out = std::string(library) + " call " + call + " failed at " + Basename(file) +
                    ":" + std::to_string(line) + ": error " + std::to_string(code) + " (" +
                    (message ? message : "no message") + ")";
  return out;
}

void ThrowDeviceError(const char* library, const char* call, const char* file, int line, int code,
                      const char* message) {
  throw DeviceError(FormatDeviceError(library, call, file, line, code, message));
}

void ReportDeviceError(const char* library, const char* call, const char* file, int line,
                       int code, const char* message) noexcept {
  try {
    const std::string text = FormatDeviceError(library, call, file, line, code, message);
    std::fprintf(stderr, "cerar: ignored in cleanup: %s\n", text.c_str());
  } catch (...) {
    std::fprintf(stderr, "cerar: ignored in cleanup: %s call failed\n", library);
  }
}

void ClearPendingError() noexcept {
  // A sticky error (a broken context) stays whatever this does; the next call reports it.
  (void)cudaGetLastError();
}

void CheckLaunch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();  // also clears it
  if (status == cudaSuccess) return;
  const std::string call = std::string("launch of ") + kernel;
  ThrowDeviceError("CUDA", call.c_str(), file, line, static_cast<int>(status),
                   cudaGetErrorString(status));
}

}  // namespace cerar::cuda
