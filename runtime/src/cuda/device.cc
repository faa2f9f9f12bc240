// Device discovery that never throws, so binaries start and skip cleanly without a GPU.
#include "cerar/runtime/cuda/device.h"

#include <cstdio>

#include "checks.h"

namespace cerar::cuda {

DeviceAvailability QueryDevices() noexcept {
  DeviceAvailability out;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    out.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
    cudaGetLastError();  // reset the runtime's last-error state; this failure is reported above
    return out;
  }
  out.count = count;
  if (count == 0) out.reason = "cudaGetDeviceCount reports 0 CUDA devices";
  return out;
}

std::string DescribeDevice(int device) {
  cudaDeviceProp prop{};
  CERAR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace cerar::cuda
