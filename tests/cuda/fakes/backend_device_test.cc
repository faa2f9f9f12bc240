// The CUDA back end works on the device current at its creation and switches to it for each
// call; its destructor too (a sync of the legacy stream, cublasDestroy and the cudaFree of the
// matrices ran on whatever device was current). Against the fake runtime (fake_device.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cerar/runtime/cuda/cuda_backend.h"
#include "fake_device.h"
#include "test_designs.h"

namespace cerar {
namespace {

TEST(CudaBackendDevice, TheDestructorRunsOnTheBackEndsDevice) {
  fake::Reset();
  fake::State().current = 0;
  auto backend = CreateCudaBackend(nullptr);
  const Design d = test::RandomDesign(2, 2, 1);
  backend->SetMatrices(d.encoder(0), d.decoder(0));
  fake::State().current = 1;  // the caller moved on to another device
  fake::State().placed.clear();
  backend.reset();
  for (const char* call : {"StreamSynchronize@0", "cublasDestroy@0", "Free@0"}) {
    EXPECT_NE(std::find(fake::State().placed.begin(), fake::State().placed.end(), call),
              fake::State().placed.end())
        << call;
  }
  for (const std::string& call : fake::State().placed)
    EXPECT_EQ(call.substr(call.size() - 2), "@0") << call;
  EXPECT_EQ(fake::State().current, 1);  // and back
}

}  // namespace
}  // namespace cerar
