// Fake cuBLAS entry points and no-op kernel launchers (kernels.h) for the CUDA back end's host
// logic (see fake_device.h): every call is logged; nothing is computed.
#include <cublas_v2.h>

#include <cstdint>

#include "fake_device.h"
#include "kernels.h"

using cerar::fake::Log;

extern "C" {

// cublas_v2.h maps these names to their _v2 symbols.
cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  Log("cublasCreate");
  static int storage;
  *handle = reinterpret_cast<cublasHandle_t>(&storage);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t) {
  Log("cublasDestroy");
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode(cublasHandle_t, cublasPointerMode_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmEx_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t,
                               int64_t, int64_t, const void*, const void*, cudaDataType, int64_t,
                               const void*, cudaDataType, int64_t, const void*, void*,
                               cudaDataType, int64_t, cublasComputeType_t, cublasGemmAlgo_t) {
  Log("cublasGemmEx");
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasScalEx_64(cublasHandle_t, int64_t, const void*, cudaDataType, void*,
                               cudaDataType, int64_t, cudaDataType) {
  Log("cublasScalEx");
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t) { return "fake cublas status"; }

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr, int) {
  *value = 4;
  return cudaSuccess;
}

}  // extern "C"

namespace cerar::cuda {

// Counts which of the step kernel's paths a launch would take: the 16-byte vectors when every
// pointer given is 16-byte aligned (kernels.cu), else scalars.
void LaunchStep(DType, const void* e_now, const void* y_prev, const void* e_back, void* x,
                void* obs, std::size_t, int, cudaStream_t) {
  Log("LaunchStep");
  const auto aligned = [](const void* p) {
    return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  const bool vector =
      aligned(e_now) && aligned(y_prev) && aligned(e_back) && aligned(x) && aligned(obs);
  ++(vector ? cerar::fake::State().steps_vector : cerar::fake::State().steps_scalar);
}
void LaunchConvertFromDouble(DType, const double*, void*, std::size_t, cudaStream_t) {
  Log("LaunchConvert");
}
void LaunchWideEncode(bool, const double*, int, int, int, int, const float*, std::size_t,
                      std::size_t, std::size_t, void*, std::size_t, int, cudaStream_t) {
  Log("LaunchWideEncode");
}
void LaunchWideDecode(bool, const double*, int, int, const void*, std::size_t, float*,
                      std::size_t, std::size_t, std::size_t, double, int, cudaStream_t) {
  Log("LaunchWideDecode");
}
void LaunchWideStep(bool, const void*, const float*, const void*, const void*, float*, void*,
                    void*, std::size_t, int, cudaStream_t) {
  Log("LaunchWideStep");
}

}  // namespace cerar::cuda
