// Kernel launch checks (checks.h) against the fake runtime: a launch reports its own status only,
// never an earlier error still pending in the runtime (a failed cudaMalloc's), and names the
// kernel.
#include <gtest/gtest.h>

#include <string>

#include "checks.h"
#include "fake_device.h"

namespace cerar {
namespace {

TEST(LaunchCheck, AFailedCallLeavesNoPendingErrorBehind) {
  fake::Reset();
  fake::State().malloc_result = cudaErrorMemoryAllocation;
  void* p = nullptr;
  EXPECT_THROW(CERAR_CUDA_CHECK(cudaMalloc(&p, 64)), DeviceError);
  // Pending, it failed the next kernel launch of the run as "out of memory".
  EXPECT_EQ(fake::State().last_error, cudaSuccess);
}

TEST(LaunchCheck, AnEarlierPendingErrorIsNotThisLaunchsFailure) {
  fake::Reset();
  fake::State().last_error = cudaErrorMemoryAllocation;  // e.g. the caller's own cudaMalloc
  EXPECT_NO_THROW(CERAR_CUDA_LAUNCH("StepKernel<f32>", fake::Launch(cudaSuccess)));
}

TEST(LaunchCheck, AFailedLaunchNamesTheKernel) {
  fake::Reset();
  try {
    CERAR_CUDA_LAUNCH("StepKernel<bf16>", fake::Launch(cudaErrorInvalidConfiguration));
    FAIL() << "no throw";
  } catch (const DeviceError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("launch of StepKernel<bf16> failed"), std::string::npos) << text;
    EXPECT_NE(text.find("error 9"), std::string::npos) << text;
  }
  EXPECT_EQ(fake::State().last_error, cudaSuccess);
}

}  // namespace
}  // namespace cerar
