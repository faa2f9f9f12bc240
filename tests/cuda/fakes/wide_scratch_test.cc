// The CUDA back end stages a float64-state step's y in scratch memory. That memory was allocated
// (cudaMalloc, after a stream sync) inside the first run that needed it (F9): the first timed
// run paid for it, and an out-of-memory failed the run mid-protocol, after its peers had started.
// The engine now has the back end allocate it at construction (ComputeBackend::Prepare). Against
// the fake runtime (fake_device.h), whose cudaMalloc is counted.
#include <gtest/gtest.h>

#include <vector>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "fake_device.h"
#include "host_backends.h"
#include "test_designs.h"

namespace cerar {
namespace {

cudaStream_t FakeStream() { return reinterpret_cast<cudaStream_t>(0x200); }

TEST(CudaWideScratch, AFloat64StateRunAllocatesNothing) {
  for (const int c : {2, 5}) {  // c <= 2N and c > 2N (feedback rows)
    fake::Reset();
    auto backend = CreateCudaBackend(FakeStream());
    test::DeviceTransport transport(FakeStream(), 2);
    AllReduceOptions o;
    o.accumulation = Accumulation::kFloat64State;
    o.segment_bytes = 4096;  // several segments, the last one shorter
    const std::size_t count = 10007;
    CodedAllReduce coded(test::RandomDesign(2, c, 1), transport, *backend, count, o);
    const int after_setup = fake::State().Count("Malloc");
    std::vector<float> buffer(count, 1.0f);  // fake device memory is host memory
    for (int run = 0; run < 2; ++run) {
      coded.Run(buffer.data());
      EXPECT_EQ(fake::State().Count("Malloc"), after_setup) << "c " << c << ", run " << run;
    }
    EXPECT_GT(fake::State().Count("LaunchWideStep"), 0);
    EXPECT_GT(fake::State().Count("MemcpyAsync"), 0) << "y was not staged: the test tests nothing";
  }
}

}  // namespace
}  // namespace cerar
