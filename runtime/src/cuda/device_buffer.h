#pragma once
// Owning device allocation (cudaMalloc/cudaFree) and a guard that makes a device current for
// the length of a call.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "checks.h"

namespace cerar::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) CERAR_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) CERAR_CUDA_REPORT(cudaFree(ptr_));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    CERAR_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device_) CERAR_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~DeviceGuard() {
    if (previous_ != device_) CERAR_CUDA_REPORT(cudaSetDevice(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

}  // namespace cerar::cuda
