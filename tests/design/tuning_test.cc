// TuneEps and Sweep (PROTOCOL.md §8).
#include <cmath>

#include "cerar/errors.h"
#include "test_support.h"

namespace cerar::design::test {
namespace {

class Tuning : public testing::TestWithParam<NC> {};

TEST_P(Tuning, TunedEpsBeatsEverySweepPoint) {
  const auto [N, c] = GetParam();
  for (Arithmetic a : {Arithmetic::kFloat32, Arithmetic::kBFloat16}) {
    // One high-precision rung (max_digits 50): tuning is not about certification.
    const TuneResult t = TuneEps(Construction::kEps, N, c, a, Precision::kAuto, 50);
    const double best = PredictedError(*t.design.figures(), N, c, a);
    EXPECT_EQ(t.design.provenance().parameters.at("eps").get<double>(), t.eps);
    const auto sweep = Sweep(Construction::kEps, N, c, 1e-7, 1.0, 29, Precision::kAuto, 50);
    for (const SweepPoint& p : sweep) {
      EXPECT_LE(best, PredictedError(p.figures, N, c, a) * (1 + 1e-9))
          << ToString(a) << " eps " << p.eps << " tuned " << t.eps;
    }
    // Deterministic.
    EXPECT_EQ(TuneEps(Construction::kEps, N, c, a, Precision::kAuto, 50).eps, t.eps);
  }
}

INSTANTIATE_TEST_SUITE_P(Design, Tuning,
                         testing::Values(NC{2, 1}, NC{4, 3}, NC{2, 3}, NC{4, 8}, NC{3, 7}),
                         NcName);

// Approximate designs (c > N >= 3; c <= N or N = 2 are exact and have no eps trade-off).
class TradeOff : public testing::TestWithParam<NC> {};

TEST_P(TradeOff, Float32OptimumBalancesTheTwoErrors) {
  const auto [N, c] = GetParam();
  const TuneResult t =
      TuneEps(Construction::kEps, N, c, Arithmetic::kFloat32, Precision::kAuto, 50);
  const Figures& f = *t.design.figures();
  const double total = PredictedError(f, N, c, Arithmetic::kFloat32);
  // At the optimum neither part is negligible: err_rms is a sizeable share of the total.
  EXPECT_GT(f.err_rms, 0.2 * total);
  EXPECT_LT(f.err_rms, total);
  // A smaller eps for float64 (rounding is 2^29 times smaller).
  EXPECT_LT(TuneEps(Construction::kEps, N, c, Arithmetic::kFloat64, Precision::kAuto, 50).eps,
            t.eps);
}

INSTANTIATE_TEST_SUITE_P(Design, TradeOff, testing::Values(NC{4, 8}, NC{3, 7}, NC{5, 8}),
                         NcName);

TEST(Sweep, LogGridWithExactEnds) {
  const auto s = Sweep(Construction::kEps, 4, 8, 1e-4, 1e-1, 4, Precision::kFloat64);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.front().eps, 1e-4);
  EXPECT_EQ(s.back().eps, 1e-1);
  EXPECT_NEAR(s[1].eps, 1e-3, 1e-15);
  for (std::size_t k = 1; k < s.size(); ++k) {
    EXPECT_GT(s[k].figures.err_op, s[k - 1].figures.err_op);      // error grows with eps
    EXPECT_LT(s[k].figures.kappa_dec, s[k - 1].figures.kappa_dec);  // conditioning improves
  }
  EXPECT_EQ(Sweep(Construction::kEps, 4, 8, 1e-3, 1e-3, 1, Precision::kFloat64).size(), 1u);
  EXPECT_THROW(Sweep(Construction::kEps, 4, 8, 0.0, 1e-1, 4, Precision::kFloat64),
               InvalidArgument);
  EXPECT_THROW(Sweep(Construction::kEps, 4, 8, 1e-3, 1e-1, 0, Precision::kFloat64),
               InvalidArgument);
  EXPECT_THROW(Sweep(Construction::kEps, 4, 8, 1e-3, 1e-1, 1000000000, Precision::kFloat64),
               InvalidArgument);  // once std::bad_alloc from reserve
}

}  // namespace
}  // namespace cerar::design::test
