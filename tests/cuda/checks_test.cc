// The check macros: message format and that a failing call throws DeviceError. Runs without a
// GPU (error strings come from the libraries, not from a device).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "checks.h"
#include "cerar/runtime/cuda/device.h"

namespace cerar::cuda {
namespace {

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "(no DeviceError)";
}

TEST(CudaChecks, FormatNamesLibraryCallFileLineCodeAndMessage) {
  EXPECT_EQ(FormatDeviceError("CUDA", "cudaMalloc(&p, n)", "/x/y/backend.cc", 42, 2, "out of memory"),
            "CUDA call cudaMalloc(&p, n) failed at backend.cc:42: error 2 (out of memory)");
}

TEST(CudaChecks, CudaCheckThrowsWithCallTextAndLibraryMessage) {
  const int line = __LINE__ + 1;
  const std::string msg = MessageOf([] { CERAR_CUDA_CHECK(cudaErrorInvalidValue); });
  EXPECT_NE(msg.find("CUDA call cudaErrorInvalidValue failed at checks_test.cc:" +
                     std::to_string(line)), std::string::npos) << msg;
  EXPECT_NE(msg.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << msg;
  EXPECT_NE(msg.find("error " + std::to_string(int(cudaErrorInvalidValue))), std::string::npos) << msg;
}

TEST(CudaChecks, CublasCheckCarriesStatusString) {
  const std::string msg = MessageOf([] { CERAR_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE); });
  EXPECT_NE(msg.find("cuBLAS call CUBLAS_STATUS_INVALID_VALUE failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE)), std::string::npos) << msg;
}

TEST(CudaChecks, NcclCheckCarriesErrorString) {
  const std::string msg = MessageOf([] { CERAR_NCCL_CHECK(ncclInvalidArgument); });
  EXPECT_NE(msg.find("NCCL call ncclInvalidArgument failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find(ncclGetErrorString(ncclInvalidArgument)), std::string::npos) << msg;
}

TEST(CudaChecks, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(CERAR_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(CERAR_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NO_THROW(CERAR_NCCL_CHECK(ncclSuccess));
}

TEST(CudaChecks, DeviceErrorIsACerarError) {
  EXPECT_THROW(CERAR_CUDA_CHECK(cudaErrorMemoryAllocation), Error);
}

// Without a driver a real runtime call fails and the macro reports it; with one it succeeds.
TEST(CudaChecks, RealCallWithoutDeviceThrowsNamingTheCall) {
  const auto avail = QueryDevices();
  if (avail.count > 0) {
    EXPECT_NO_THROW(CERAR_CUDA_CHECK(cudaSetDevice(0)));
    return;
  }
  EXPECT_FALSE(avail.reason.empty());
  const std::string msg = MessageOf([] { CERAR_CUDA_CHECK(cudaSetDevice(0)); });
  EXPECT_NE(msg.find("cudaSetDevice(0)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cerar::cuda
