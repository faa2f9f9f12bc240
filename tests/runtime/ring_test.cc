// The exact ring all-reduce on threads: exact sum to rounding, 2 (N-1) ceil(n/N) elements sent
// per rank, counts not divisible by N, average.
#include <gtest/gtest.h>

#include "cases.h"
#include "cerar/errors.h"
#include "cerar/runtime/inprocess.h"

namespace cerar {
namespace {

class RingTest
    : public ::testing::TestWithParam<std::tuple<int, std::size_t, std::size_t, bool>> {};

TEST_P(RingTest, ExactSumAndBytes) {
  const auto [N, count, seg, f32] = GetParam();
  std::vector<test::RankOutcome> out(N);
  // Bindings by copy: clang 14 (the sanitizer job) cannot capture them by reference.
  auto errors = RunInProcess(N, [&, count = count, seg = seg, f32 = f32](Transport& tr) {
    out[tr.rank()] = f32 ? test::RingCase<float>(tr, count, 4, seg)
                         : test::RingCase<double>(tr, count, 4, seg);
  });
  for (auto& e : errors) ASSERT_FALSE(e) << ExceptionMessage(e);
  for (int j = 0; j < N; ++j) {
    EXPECT_LE(out[j].err, out[j].tol * out[j].scale) << "rank " << j;
    EXPECT_EQ(out[j].bytes, out[j].expected_bytes) << "rank " << j;
  }
  if (count % N == 0) {  // the textbook figure 2 (N-1)/N d
    EXPECT_EQ(out[0].bytes, 2ull * (N - 1) * count / N * (f32 ? 4 : 8));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Grid, RingTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),  // 1: a world of one sends nothing
                       ::testing::Values(std::size_t(0), std::size_t(1), std::size_t(7),
                                         std::size_t(1000), std::size_t(10007)),
                       ::testing::Values(std::size_t(64), std::size_t(1) << 20),
                       ::testing::Bool()));

TEST(Ring, AverageAndBadArguments) {
  auto errors = RunInProcess(3, [](Transport& tr) {
    std::vector<double> buf(10, double(tr.rank() + 1));
    AllReduceOptions o;
    o.dtype = DType::kFloat64;
    o.op = ReduceOp::kAverage;
    RingAllReduce ar(tr, buf.size(), o);
    ar.Run(buf.data());
    for (double v : buf) EXPECT_DOUBLE_EQ(v, 2.0);
    o.dtype = DType::kFloat16;
    EXPECT_THROW(RingAllReduce(tr, 4, o), InvalidArgument);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
}

}  // namespace
}  // namespace cerar
