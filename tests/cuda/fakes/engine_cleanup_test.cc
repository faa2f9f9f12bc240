// Engine destructors are noexcept: a back end whose Free throws (the CUDA back end's cudaFree
// after any sticky CUDA error in the process) must not end the process through std::terminate.
// The engine reports the failure and keeps the block instead.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "host_backends.h"
#include "test_designs.h"

namespace cerar {
namespace {

void BuildAndDropEngines() {
  const Design d = test::RandomDesign(2, 2, 1);
  const auto errors = RunInProcess(2, [&](Transport& tr) {
    test::WrappedCpuBackend be;
    be.free_throws = true;
    std::vector<float> x(10, 1.0f);
    {
      CodedAllReduce coded(d, tr, be, x.size(), AllReduceOptions{});
      coded.Run(x.data());
    }  // ~CodedAllReduce: Free throws
    RingAllReduce ring(tr, be, x.size(), AllReduceOptions{});
    ring.Run(x.data());
  });  // ~RingAllReduce: Free throws
  for (const auto& e : errors)
    if (e) std::_Exit(3);
}

TEST(EngineCleanup, AThrowingFreeInTheDestructorIsReportedNotFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        BuildAndDropEngines();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "cerar: ignored in cleanup: .*cudaFree.*fake");
}

}  // namespace
}  // namespace cerar
