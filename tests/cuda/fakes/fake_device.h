#pragma once
// Test-only fake CUDA runtime, cuBLAS and NCCL entry points (fake_device.cc, fake_blas.cc) and
// no-op kernel launchers, so that the host logic of the NCCL transport, the CUDA back end and the
// launch checks runs on a machine without a GPU, cudart or NCCL.
// Device memory is host memory; a stream runs nothing; every call is logged by name. Tests set
// the results they need in State() and reset it with Reset().
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <vector>

namespace cerar::fake {

struct DeviceState {
  std::vector<std::string> calls;  // every faked call, by name without the prefix, in order
  std::vector<std::string> placed;  // the same, each with the current device: "Free@0"
  int rank = 0, size = 2, device = 0;  // the communicator's
  int current = 0;                     // the current device (cudaSetDevice)
  ncclResult_t group_end = ncclSuccess, send = ncclSuccess, recv = ncclSuccess;
  ncclResult_t user_rank = ncclSuccess;  // ncclCommUserRank's result
  ncclResult_t init_result = ncclSuccess;  // ncclCommInitRankConfig's (the state: async_*)
  int init_blocking = -1;                  // the config.blocking it was given
  ncclResult_t teardown = ncclSuccess;     // what ncclCommDestroy and ncclCommAbort answer
  ncclResult_t async_error = ncclSuccess;  // what ncclCommGetAsyncError reports ...
  int async_in_progress = 0;               // ... after this many ncclInProgress answers
  cudaError_t event_query = cudaSuccess;   // cudaErrorNotReady: the exchange never completes
  cudaError_t malloc_result = cudaSuccess;
  cudaError_t last_error = cudaSuccess;    // the runtime's pending error (cudaGetLastError)
  int steps_vector = 0, steps_scalar = 0;  // LaunchStep calls by the kernel path they would take
  int Count(const std::string& name) const;
};

DeviceState& State();
void Reset();
void Log(const char* name);  // a faked call

// A stand-in for a kernel launch (<<<...>>> returns nothing): leaves `status` as the runtime's
// last error when it is an error, as a failed launch does.
void Launch(cudaError_t status);

}  // namespace cerar::fake
