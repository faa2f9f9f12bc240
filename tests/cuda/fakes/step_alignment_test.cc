// The CUDA step kernel moves 16-byte vectors only when every pointer it gets is 16-byte aligned
// (kernels.cu). The engine's pointers were seldom all aligned (F13): rows of m elements put every
// other row off 16 bytes unless 16 divides m·sizeof(T), and segments of ceil(m / send_slots)
// columns started anywhere. A device back end's rows and send slots are now padded to 16 bytes
// and its segments start on 16-byte columns, except the one at the column where the number of
// data components drops (fixed by the protocol). Against the fake runtime (fake_device.h), whose
// LaunchStep counts the path each launch would take; and the padded layout on the CPU back end
// computes the same bits as the CPU's own layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "cerar/runtime/inprocess.h"
#include "fake_device.h"
#include "host_backends.h"
#include "test_designs.h"

namespace cerar {
namespace {

cudaStream_t FakeStream() { return reinterpret_cast<cudaStream_t>(0x200); }

void RunOnFakeDevice(DType dtype, std::size_t count) {
  fake::Reset();
  auto backend = CreateCudaBackend(FakeStream());
  test::DeviceTransport transport(FakeStream(), 2);
  AllReduceOptions o;
  o.dtype = dtype;
  o.segment_bytes = 4096;  // several segments
  CodedAllReduce coded(test::RandomDesign(2, 3, 1), transport, *backend, count, o);
  std::vector<char> buffer(count * SizeOf(dtype));  // fake device memory is host memory
  coded.Run(buffer.data());
}

TEST(CudaStepAlignment, EveryStepButThoseOfTheSegmentAtTheDataBoundaryIsVectorised) {
  // N = 2, c = 3: L = 3, so each segment takes L + 1 = 4 steps. m = ceil(count / 3), and
  // r = count mod m is the column where the data components drop to 2.
  const std::vector<std::size_t> counts = {
      15003,         // m = 5001 (rows of 20004 bytes: every other row was off 16), r = 0
      13003,         // m = 4335, r = 4333: the segment starting at r cannot be aligned
      3 * 1024 * 8,  // m = 8192: aligned before as well
      1000,          // m = 334, r = 332 (off 16 bytes in bf16 only)
  };
  for (const DType dtype : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    for (const std::size_t count : counts) {
      RunOnFakeDevice(dtype, count);
      const std::size_t m = (count + 2) / 3, r = count % m;
      const bool r_aligned = (r * SizeOf(dtype)) % 16 == 0;
      const std::string what = ToString(dtype) + ", count " + std::to_string(count);
      EXPECT_EQ(fake::State().steps_scalar, r_aligned ? 0 : 4) << what;
      EXPECT_GT(fake::State().steps_vector, 0) << what;
    }
  }
}

// The in-process transport claiming device memory, so that the engine lays the CPU back end's
// workspace out as a device back end's.
class DeviceClaim final : public Transport {
 public:
  explicit DeviceClaim(Transport& in) : in_(in) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  Handle StartExchange(const void* s, void* r, std::size_t b) override {
    return in_.StartExchange(s, r, b);
  }
  void Wait(Handle h) override { in_.Wait(h); }
  void CheckAgreement(const std::string& w, std::uint64_t v) override { in_.CheckAgreement(w, v); }
  std::uint64_t bytes_sent() const override { return in_.bytes_sent(); }
  void ResetCounters() override { in_.ResetCounters(); }

 private:
  Transport& in_;
};

// Rank j's input: deterministic, distinct per rank and element.
template <typename T>
std::vector<T> Input(int j, std::size_t count) {
  std::vector<T> x(count);
  for (std::size_t i = 0; i < count; ++i)
    x[i] = static_cast<T>(std::sin(0.37 * double(i) + 1.3 * j) * (1 + j));
  return x;
}

template <typename T>
std::vector<std::vector<T>> RunCpu(const Design& d, std::size_t count, AllReduceOptions o,
                                   bool padded) {
  std::vector<std::vector<T>> out(d.N());
  const auto errors = RunInProcess(d.N(), [&](Transport& in) {
    DeviceClaim claim(in);
    test::WrappedCpuBackend be;
    if (padded) be.space = MemorySpace::kDevice;
    Transport& tr = padded ? static_cast<Transport&>(claim) : in;
    std::vector<T> x = Input<T>(tr.rank(), count);
    CodedAllReduce(d, tr, be, count, o).Run(x.data());
    out[tr.rank()] = x;
  });
  for (const auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
  return out;
}

template <typename T>
void ExpectSameBits(DType dtype, Accumulation accumulation) {
  for (const auto& [N, c] : {std::pair{2, 3}, std::pair{3, 7}, std::pair{4, 2}}) {
    const Design d = test::RandomDesign(N, c, 7 + N * 16 + c);
    for (const std::size_t count : {std::size_t(13003), std::size_t(1000), std::size_t(77)}) {
      AllReduceOptions o;
      o.dtype = dtype;
      o.accumulation = accumulation;
      o.segment_bytes = 4096;
      const auto plain = RunCpu<T>(d, count, o, false);
      const auto padded = RunCpu<T>(d, count, o, true);
      for (int j = 0; j < N; ++j)
        EXPECT_EQ(std::memcmp(plain[j].data(), padded[j].data(), count * sizeof(T)), 0)
            << "N " << N << ", c " << c << ", count " << count << ", "
            << ToString(accumulation) << ", rank " << j;
    }
  }
}

// A device rank and a host rank would cut different segments: every rank refuses, naming it.
TEST(CudaStepAlignment, RanksWithDifferentAlignmentsRefuseToRun) {
  const Design d = test::RandomDesign(2, 3, 5);
  const auto errors = RunInProcess(d.N(), [&](Transport& in) {
    DeviceClaim claim(in);
    test::WrappedCpuBackend be;
    const bool device = in.rank() == 0;
    if (device) be.space = MemorySpace::kDevice;
    Transport& tr = device ? static_cast<Transport&>(claim) : in;
    CodedAllReduce(d, tr, be, 1001, AllReduceOptions{});
  });
  for (const auto& e : errors) {
    ASSERT_TRUE(e);
    EXPECT_NE(ExceptionMessage(e).find("segment alignment in columns"), std::string::npos)
        << ExceptionMessage(e);
  }
}

TEST(CudaStepAlignment, ThePaddedLayoutComputesTheSameBitsOnTheCpu) {
  ExpectSameBits<float>(DType::kFloat32, Accumulation::kBuffer);
  ExpectSameBits<double>(DType::kFloat64, Accumulation::kBuffer);
  ExpectSameBits<float>(DType::kFloat32, Accumulation::kFloat64);
  ExpectSameBits<float>(DType::kFloat32, Accumulation::kFloat64State);
}

}  // namespace
}  // namespace cerar
