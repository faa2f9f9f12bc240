// The host-side rounding helpers the GPU tests compare with (no device needed): values must be
// those of IEEE binary16 / bfloat16 round-to-nearest-even.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu_test_util.h"

namespace cerar::test {
namespace {

TEST(CudaTestUtil, RoundToMatchesTheFormats) {
  // 1/3 = 0.0101010101...b: bfloat16 keeps 8 significant bits, binary16 11.
  EXPECT_EQ(RoundTo(DType::kBFloat16, 1.0 / 3), 0x1.56p-2);    // 0.333984375
  EXPECT_EQ(RoundTo(DType::kFloat16, 1.0 / 3), 0x1.554p-2);    // 0.333251953125
  EXPECT_EQ(RoundTo(DType::kFloat32, 1.0 / 3), double(1.0f / 3.0f));
  EXPECT_EQ(RoundTo(DType::kFloat64, 1.0 / 3), 1.0 / 3);
  // Ties go to even: 1 + 2^-8 lies halfway between bfloat16 neighbours 1 and 1 + 2^-7.
  EXPECT_EQ(RoundTo(DType::kBFloat16, 1.0 + 0x1p-8), 1.0);
  EXPECT_EQ(RoundTo(DType::kFloat16, 1.0 + 0x1p-11), 1.0);
  EXPECT_EQ(RoundTo(DType::kFloat16, 70000.0), INFINITY);  // above binary16's 65504
}

TEST(CudaTestUtil, PackUnpackRoundTripsAndSizes) {
  const std::vector<double> v = {0.0, -1.5, 0.25, 1024.0};
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16}) {
    const auto bytes = Pack(t, v);
    EXPECT_EQ(bytes.size(), v.size() * ElementSize(t)) << Name(t);
    EXPECT_EQ(Unpack(t, bytes), v) << Name(t);  // all exactly representable
  }
  EXPECT_EQ(StoreRoundoff(DType::kBFloat16), std::ldexp(1.0, -8));
  EXPECT_EQ(StoreRoundoff(DType::kFloat16), std::ldexp(1.0, -11));
}

}  // namespace
}  // namespace cerar::test
