#pragma once
// Helpers for the CUDA tests: skip without a device, move typed data between host and device,
// and round host values to a buffer type the way the device stores them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "checks.h"
#include "cerar/runtime/cuda/device.h"
#include "cerar/runtime/transport.h"

// Skips the current test, with the reason, where no CUDA device is usable; fails it instead when
// the environment sets CERAR_REQUIRE_GPU=1 (a GPU machine whose device went missing must not
// pass as "skipped": ctest counts a binary whose tests all skip as passed).
#define CERAR_REQUIRE_GPU()                                                 \
  do {                                                                      \
    const auto cerar_avail_ = ::cerar::cuda::QueryDevices();                \
    if (cerar_avail_.count == 0) {                                          \
      if (::cerar::test::GpuRequired())                                     \
        FAIL() << "CERAR_REQUIRE_GPU=1 and no CUDA device: "                \
               << cerar_avail_.reason;                                      \
      GTEST_SKIP() << "no CUDA device: " << cerar_avail_.reason;            \
    }                                                                       \
  } while (0)

namespace cerar::test {

inline bool GpuRequired() {
  const char* v = std::getenv("CERAR_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

// The runtime's vocabulary (transport.h), under the names these tests use.
inline std::size_t ElementSize(DType t) { return SizeOf(t); }
inline std::string Name(DType t) { return ToString(t); }

// Unit roundoff of the buffer type (storage) and of the arithmetic it is computed in.
inline double StoreRoundoff(DType t) {
  switch (t) {
    case DType::kFloat64: return 0x1p-53;
    case DType::kFloat32: return 0x1p-24;
    case DType::kBFloat16: return 0x1p-8;
    case DType::kFloat16: return 0x1p-11;
  }
  return 1;
}
inline double AccumRoundoff(DType t) { return t == DType::kFloat64 ? 0x1p-53 : 0x1p-24; }

// The absolute part of one rounding: fl(x) = x(1 + d) + e with |e| at most half the subnormal
// spacing of the type. Relative bounds alone fail for results near zero (an f16 product of
// -5.8e-6 is subnormal there, spacing 2^-24, and rounds by up to 2^-25 whatever its size).
// float64's half spacing, 2^-1075, is not a double (it rounded to 0): its whole spacing bounds it.
inline double StoreUnderflow(DType t) {
  switch (t) {
    case DType::kFloat64: return 0x1p-1074;
    case DType::kFloat32: return 0x1p-150;
    case DType::kBFloat16: return 0x1p-134;
    case DType::kFloat16: return 0x1p-25;
  }
  return 1;
}
inline double AccumUnderflow(DType t) { return t == DType::kFloat64 ? 0x1p-1074 : 0x1p-150; }

// Raw bytes of `values` stored as `t` (rounded to nearest).
inline std::vector<unsigned char> Pack(DType t, const std::vector<double>& values) {
  std::vector<unsigned char> out(values.size() * ElementSize(t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned char* p = out.data() + i * ElementSize(t);
    switch (t) {
      case DType::kFloat64: { const double v = values[i]; std::memcpy(p, &v, 8); break; }
      case DType::kFloat32: { const float v = float(values[i]); std::memcpy(p, &v, 4); break; }
      case DType::kBFloat16: { const __nv_bfloat16 v = __double2bfloat16(values[i]); std::memcpy(p, &v, 2); break; }
      case DType::kFloat16: { const __half v = __double2half(values[i]); std::memcpy(p, &v, 2); break; }
    }
  }
  return out;
}

inline std::vector<double> Unpack(DType t, const std::vector<unsigned char>& bytes) {
  std::vector<double> out(bytes.size() / ElementSize(t));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = bytes.data() + i * ElementSize(t);
    switch (t) {
      case DType::kFloat64: { double v; std::memcpy(&v, p, 8); out[i] = v; break; }
      case DType::kFloat32: { float v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::kBFloat16: { __nv_bfloat16 v; std::memcpy(&v, p, 2); out[i] = double(__bfloat162float(v)); break; }
      case DType::kFloat16: { __half v; std::memcpy(&v, p, 2); out[i] = double(__half2float(v)); break; }
    }
  }
  return out;
}

// The value `x` becomes when stored as `t`.
inline double RoundTo(DType t, double x) { return Unpack(t, Pack(t, {x}))[0]; }

// A device buffer of `count` elements of type t, freed on scope exit.
class DeviceArray {
 public:
  DeviceArray(DType t, std::size_t count) : t_(t), count_(count) {
    if (count > 0) CERAR_CUDA_CHECK(cudaMalloc(&ptr_, count * ElementSize(t)));
  }
  ~DeviceArray() { if (ptr_) cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  void* get() const { return ptr_; }
  // Element `offset` as a pointer (for unaligned or offset views).
  void* at(std::size_t offset) const { return static_cast<char*>(ptr_) + offset * ElementSize(t_); }
  void Upload(const std::vector<double>& values) {
    const auto bytes = Pack(t_, values);
    if (!bytes.empty())
      CERAR_CUDA_CHECK(cudaMemcpy(ptr_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    // A pageable cudaMemcpy may return before the data lands, and the back ends work on
    // non-blocking streams that do not wait for the legacy stream: finish it here.
    CERAR_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<double> Download() const {
    std::vector<unsigned char> bytes(count_ * ElementSize(t_));
    CERAR_CUDA_CHECK(cudaDeviceSynchronize());
    if (!bytes.empty())
      CERAR_CUDA_CHECK(cudaMemcpy(bytes.data(), ptr_, bytes.size(), cudaMemcpyDeviceToHost));
    return Unpack(t_, bytes);
  }

 private:
  DType t_;
  std::size_t count_;
  void* ptr_ = nullptr;
};

}  // namespace cerar::test
