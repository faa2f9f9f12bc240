// How error and conditioning scale with eps (PROTOCOL.md §6): error O(eps), kappa ~ eps^-r*.
#include <cmath>

#include "test_support.h"

namespace cerar::design::test {
namespace {

class HalvingEps : public testing::TestWithParam<NC> {};

TEST_P(HalvingEps, HalvesTheError) {
  const auto [N, c] = GetParam();
  ASSERT_GT(c, N);
  ASSERT_GE(N, 3);  // N = 2 is exact for any c (one window per rank)
  const double eps = 1e-3;
  const Figures a = *Make(Construction::kEps, N, c, eps).figures();
  const Figures b = *Make(Construction::kEps, N, c, eps / 2).figures();
  EXPECT_NEAR(b.err_op / a.err_op, 0.5, 0.05) << a.err_op << " -> " << b.err_op;
  EXPECT_NEAR(b.err_rms / a.err_rms, 0.5, 0.05) << a.err_rms << " -> " << b.err_rms;
}

INSTANTIATE_TEST_SUITE_P(Design, HalvingEps,
                         testing::Values(NC{3, 4}, NC{3, 6}, NC{3, 7}, NC{4, 6}, NC{4, 8},
                                         NC{5, 13}, NC{8, 20}),
                         NcName);

class KappaSlope : public testing::TestWithParam<NC> {};

TEST_P(KappaSlope, LogKappaVersusLogEpsIsMinusRStar) {
  const auto [N, c] = GetParam();
  const int r = RStar(N, c);
  ASSERT_TRUE(r == 1 || r == 2);
  const double eps1 = 1e-3, eps2 = 1e-4;
  const double k1 = Make(Construction::kEps, N, c, eps1).figures()->kappa_dec;
  const double k2 = Make(Construction::kEps, N, c, eps2).figures()->kappa_dec;
  const double slope = std::log(k2 / k1) / std::log(eps2 / eps1);
  EXPECT_NEAR(slope, -r, 0.15 * r) << "kappa " << k1 << " -> " << k2;
}

INSTANTIATE_TEST_SUITE_P(Design, KappaSlope,
                         testing::Values(NC{2, 3}, NC{2, 4}, NC{3, 6}, NC{4, 6}, NC{4, 8},
                                         NC{5, 8}, NC{2, 5}, NC{3, 7}, NC{4, 12}, NC{5, 11}),
                         NcName);

}  // namespace
}  // namespace cerar::design::test
