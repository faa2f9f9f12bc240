// The eps start point: meets the kappa budget, sits on its boundary, and trades error for kappa.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "cerar/design/optimizer.h"
#include "cerar/errors.h"

namespace cerar::design {
namespace {

using Case = std::tuple<int, int>;
class StartP : public ::testing::TestWithParam<Case> {};

TEST_P(StartP, MeetsBudgetOnItsBoundary) {
  const auto [N, c] = GetParam();
  for (bool with_enc : {false, true}) {
    const EpsAtKappa s = BestEpsWithinKappa(N, c, 1e3, with_enc);
    ASSERT_TRUE(s.feasible);
    EXPECT_LE(s.figures.kappa_dec, 1e3);
    if (with_enc) {
      EXPECT_LE(s.figures.kappa_enc, 1e3);
    }
    if (c > N && N > 2) {
      // The smallest err_rms is where the binding kappa reaches the budget (bisection to 1e-12
      // in log eps).
      const double binding =
          with_enc ? std::max(s.figures.kappa_dec, s.figures.kappa_enc) : s.figures.kappa_dec;
      EXPECT_NEAR(binding / 1e3, 1.0, 1e-4);
      // A tighter budget costs error.
      const EpsAtKappa tight = BestEpsWithinKappa(N, c, 1e2, with_enc);
      EXPECT_GT(tight.figures.err_rms, s.figures.err_rms);
    } else {
      EXPECT_LT(s.figures.err_op, 1e-13);  // exact for c <= N, and for N = 2 (D = W^-1)
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, StartP,
                         ::testing::Values(Case{2, 1}, Case{2, 3}, Case{4, 3}, Case{4, 8},
                                           Case{5, 8}, Case{3, 7}, Case{4, 6}),
                         [](const ::testing::TestParamInfo<Case>& tp) {
                           char name[32];
                           std::snprintf(name, sizeof name, "N%d_c%d", std::get<0>(tp.param),
                                         std::get<1>(tp.param));
                           return std::string(name);
                         });

TEST(Start, EpsOneCluster) {
  // r* = 1 (two nodes per root): kappa ~ 1/eps and err ~ eps, so err_rms * kappa_dec is nearly
  // the same at kappa 1e3 and 1e4 (PROTOCOL.md §6: error O(eps), kappa ~ eps^-r*).
  const EpsAtKappa a = BestEpsWithinKappa(4, 8, 1e3, false),
                   b = BestEpsWithinKappa(4, 8, 1e4, false);
  EXPECT_NEAR((a.figures.err_rms * 1e3) / (b.figures.err_rms * 1e4), 1.0, 2e-2);
  EXPECT_NEAR(a.eps / b.eps, 10.0, 0.2);
}

TEST(Start, FormerlySingularEpsWindowsMeetABudget) {
  // N = 5, c = 7 used to keep cos but not sin of the q = 1 harmonic, singular at every eps;
  // with cos/sin pairs kept (PROTOCOL.md §6) the start point meets a budget like any other.
  const EpsAtKappa s = BestEpsWithinKappa(5, 7, 1e3, false);
  EXPECT_LE(s.figures.kappa_dec, 1e3);
  EXPECT_GT(s.figures.kappa_dec, 0.5e3);  // at the budget's boundary (kappa ~ 1.5 / eps)
  EXPECT_GT(s.figures.err_rms, 0.0);
}

// No eps meets the budget: a value (feasible = false) at the eps of smallest kappa, and a
// description naming the budget. N = 8, c = 24: the family's smallest kappa_dec is ~117.
TEST(Start, NoEpsMeetingTheBudgetIsAValue) {
  const EpsAtKappa s = BestEpsWithinKappa(8, 24, 1e2, false);
  EXPECT_FALSE(s.feasible);
  EXPECT_GT(s.figures.kappa_dec, 1e2);
  EXPECT_LT(s.figures.kappa_dec, 1.5e2);
  EXPECT_NE(s.Describe(8, 24, 1e2, false).find("kappa_max = 100"), std::string::npos);
  EXPECT_TRUE(BestEpsWithinKappa(8, 24, 1e3, false).feasible);
  // c = N is exact with kappa_dec = sqrt(2): a budget of 1.2 cannot be met.
  const EpsAtKappa exact = BestEpsWithinKappa(4, 4, 1.2, false);
  EXPECT_FALSE(exact.feasible);
  EXPECT_NEAR(exact.figures.kappa_dec, std::sqrt(2.0), 1e-9);
}

TEST(Start, RejectsBadArguments) {
  EXPECT_THROW(BestEpsWithinKappa(1, 4, 1e3, false), InvalidArgument);
  EXPECT_THROW(BestEpsWithinKappa(4, 0, 1e3, false), InvalidArgument);
  EXPECT_THROW(BestEpsWithinKappa(4, 8, 0.5, false), InvalidArgument);
  EXPECT_THROW(BestEpsWithinKappa(4, 8, NAN, false), InvalidArgument);
  EXPECT_THROW(BestEpsWithinKappa(4, 8, INFINITY, false), InvalidArgument);
  EXPECT_THROW(BestEpsForTarget(4, 8, Arithmetic::kFloat32, 0.5), InvalidArgument);
}

// The kPredicted start: the eps whose predicted error (optimiser's matrix form) is smallest
// matches TuneEps (the toolkit's term-by-term model, its own grid and golden section); with a
// kappa bound it stays within it.
TEST(Start, ForTargetMatchesTuneEps) {
  for (auto [N, c] : {std::pair{4, 8}, std::pair{4, 12}}) {  // r* = 1 and 2
    const EpsAtKappa s = BestEpsForTarget(N, c, Arithmetic::kFloat32, INFINITY);
    ASSERT_TRUE(s.feasible);
    const TuneResult t = TuneEps(Construction::kEps, N, c, Arithmetic::kFloat32,
                                 Precision::kFloat64);
    const double tuned = t.design.figures()->predicted_error.at("float32");
    EXPECT_NEAR(s.figures.predicted_error.at("float32") / tuned, 1.0, 2e-3) << N << " " << c;
    EXPECT_NEAR(std::log10(s.eps / t.eps), 0.0, 0.05) << N << " " << c;
    const EpsAtKappa bounded =
        BestEpsForTarget(N, c, Arithmetic::kFloat32, 0.5 * s.figures.kappa_dec);
    ASSERT_TRUE(bounded.feasible);
    EXPECT_LE(std::max(bounded.figures.kappa_dec, bounded.figures.kappa_enc),
              0.5 * s.figures.kappa_dec);
    EXPECT_GT(bounded.figures.predicted_error.at("float32"),
              s.figures.predicted_error.at("float32"));
  }
}

}  // namespace
}  // namespace cerar::design
