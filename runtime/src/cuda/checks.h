#pragma once
// Every CUDA, cuBLAS and NCCL call in CERAR goes through one of these macros. A failure throws
// cerar::DeviceError whose message carries the library, the call text, file:line, the status
// code and the library's own message, e.g.
//   "CUDA call cudaMalloc(&p, bytes) failed at cuda_backend.cc:42: error 2 (out of memory)".
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "cerar/errors.h"

namespace cerar::cuda {

// The message of a failed call (pure formatting; testable without a device).
std::string FormatDeviceError(const char* library, const char* call, const char* file, int line,
                              int code, const char* message);

[[noreturn]] void ThrowDeviceError(const char* library, const char* call, const char* file,
                                   int line, int code, const char* message);

// For destructors, which must not throw: prints the same message to stderr.
void ReportDeviceError(const char* library, const char* call, const char* file, int line,
                       int code, const char* message) noexcept;

// A failed CUDA call also leaves its error pending in the runtime (cudaGetLastError); left
// there, the next kernel launch reported it as its own failure. The CUDA macros take it back.
void ClearPendingError() noexcept;

// Kernel launches: <<<...>>> returns no status, and cudaGetLastError() after it also returns an
// earlier error still pending (the caller's failed cudaMalloc). CERAR_CUDA_LAUNCH drops such an
// error first (its own call reported it), launches, then checks the launch's own status and
// names the kernel: "CUDA call launch of StepKernel<f32> failed at kernels.cu:118: error 9 (...)".
void CheckLaunch(const char* kernel, const char* file, int line);

}  // namespace cerar::cuda

#define CERAR_CUDA_CHECK(call)                                                             \
  do {                                                                                     \
    const cudaError_t cerar_status_ = (call);                                              \
    if (cerar_status_ != cudaSuccess) {                                                    \
      ::cerar::cuda::ClearPendingError();                                                  \
      ::cerar::cuda::ThrowDeviceError("CUDA", #call, __FILE__, __LINE__,                   \
                                      static_cast<int>(cerar_status_),                     \
                                      cudaGetErrorString(cerar_status_));                  \
    }                                                                                      \
  } while (0)

// `kernel` names it in the message; the launch is the rest (it holds commas).
#define CERAR_CUDA_LAUNCH(kernel, ...)                                                     \
  do {                                                                                     \
    ::cerar::cuda::ClearPendingError();                                                    \
    __VA_ARGS__;                                                                           \
    ::cerar::cuda::CheckLaunch(kernel, __FILE__, __LINE__);                                \
  } while (0)

#define CERAR_CUBLAS_CHECK(call)                                                           \
  do {                                                                                     \
    const cublasStatus_t cerar_status_ = (call);                                           \
    if (cerar_status_ != CUBLAS_STATUS_SUCCESS)                                            \
      ::cerar::cuda::ThrowDeviceError("cuBLAS", #call, __FILE__, __LINE__,                 \
                                      static_cast<int>(cerar_status_),                     \
                                      cublasGetStatusString(cerar_status_));               \
  } while (0)

#define CERAR_NCCL_CHECK(call)                                                             \
  do {                                                                                     \
    const ncclResult_t cerar_status_ = (call);                                             \
    if (cerar_status_ != ncclSuccess)                                                      \
      ::cerar::cuda::ThrowDeviceError("NCCL", #call, __FILE__, __LINE__,                   \
                                      static_cast<int>(cerar_status_),                     \
                                      ncclGetErrorString(cerar_status_));                  \
  } while (0)

// Destructor variant: checks and reports, never throws.
#define CERAR_CUDA_REPORT(call)                                                            \
  do {                                                                                     \
    const cudaError_t cerar_status_ = (call);                                              \
    if (cerar_status_ != cudaSuccess) {                                                    \
      ::cerar::cuda::ClearPendingError();                                                  \
      ::cerar::cuda::ReportDeviceError("CUDA", #call, __FILE__, __LINE__,                  \
                                       static_cast<int>(cerar_status_),                    \
                                       cudaGetErrorString(cerar_status_));                 \
    }                                                                                      \
  } while (0)

#define CERAR_CUBLAS_REPORT(call)                                                          \
  do {                                                                                     \
    const cublasStatus_t cerar_status_ = (call);                                           \
    if (cerar_status_ != CUBLAS_STATUS_SUCCESS)                                            \
      ::cerar::cuda::ReportDeviceError("cuBLAS", #call, __FILE__, __LINE__,                \
                                       static_cast<int>(cerar_status_),                    \
                                       cublasGetStatusString(cerar_status_));              \
  } while (0)

#define CERAR_NCCL_REPORT(call)                                                            \
  do {                                                                                     \
    const ncclResult_t cerar_status_ = (call);                                             \
    if (cerar_status_ != ncclSuccess)                                                      \
      ::cerar::cuda::ReportDeviceError("NCCL", #call, __FILE__, __LINE__,                  \
                                       static_cast<int>(cerar_status_),                    \
                                       ncclGetErrorString(cerar_status_));                 \
  } while (0)

// ncclCommDestroy and ncclCommAbort: on a nonblocking communicator (the MPI bootstrap's) they
// may answer ncclInProgress, the teardown going on inside NCCL; the handle is gone either way,
// so that is not a failure to report.
#define CERAR_NCCL_REPORT_TEARDOWN(call)                                                   \
  do {                                                                                     \
    const ncclResult_t cerar_status_ = (call);                                             \
    if (cerar_status_ != ncclSuccess && cerar_status_ != ncclInProgress)                   \
      ::cerar::cuda::ReportDeviceError("NCCL", #call, __FILE__, __LINE__,                  \
                                       static_cast<int>(cerar_status_),                    \
                                       ncclGetErrorString(cerar_status_));                 \
  } while (0)
