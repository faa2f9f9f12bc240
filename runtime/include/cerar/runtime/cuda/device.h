#pragma once
// Whether a usable CUDA device is present, and why not. Never throws: tests and tools use it to
// skip cleanly on machines without a driver or GPU (the binaries link cudart dynamically and
// start anyway).
#include <string>

namespace cerar::cuda {

struct DeviceAvailability {
  int count = 0;       // CUDA devices visible to this process
  std::string reason;  // why count is 0 ("cudaGetDeviceCount: CUDA driver version is ...")
};

DeviceAvailability QueryDevices() noexcept;

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)"; throws DeviceError on failure.
std::string DescribeDevice(int device);

}  // namespace cerar::cuda
