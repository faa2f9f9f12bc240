// The optimiser's float64 objective: figures against PROTOCOL.md §7 and against an independent
// normal-equations computation from the encoders; analytic gradients against central finite
// differences.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <tuple>

#include "cerar/errors.h"
#include "design/optimizer_objective.h"
#include "directions.h"

namespace cerar::design::opt {
namespace {

using Mat = Eigen::MatrixXd;

// A generic point: the eps base sequence plus a seeded perturbation, so no symmetry makes
// singular values coincide (where the figures are not differentiable).
Eigen::VectorXd GenericPoint(const Evaluator& ev, Parametrisation p, double eps, unsigned seed) {
  Eigen::VectorXd x = EpsBaseSequence(ev.N(), ev.c(), eps);
  if (p == Parametrisation::kPerRank) x = ShiftInvariantToPerRank(ev.N(), ev.c(), x);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int k = 0; k < x.size(); ++k) x(k) += 0.05 * normal(rng);
  return x;
}

// Figures straight from PROTOCOL.md §4-§5 with the full (N-1)-block row and normal equations.
Figures Independent(const Evaluator& ev, const Eigen::VectorXd& x) {
  const int N = ev.N(), c = ev.c(), L = ev.L();
  const std::vector<MatrixXd> E = ev.Encoders(x.data());
  Figures f;
  f.err_op = f.err_rms = f.kappa_dec = f.kappa_enc = 0;
  for (int j = 0; j < N; ++j) {
    Mat sumWt = Mat::Zero(c, c), sumWWt = Mat::Zero(c, c);
    std::vector<Mat> W;
    for (int i = 0; i < N; ++i) {
      if (i == j) continue;
      const int s = HopOffset(i, j, N);
      Mat Wij(c, c);
      for (int r = 0; r < c; ++r) Wij.row(r) = E[i].row(N - 2 + r - s);
      sumWt += Wij.transpose();
      sumWWt += Wij * Wij.transpose();
      W.push_back(Wij);
    }
    const Mat D = sumWt * sumWWt.inverse();
    Mat row(c, (N - 1) * c);
    for (int k = 0; k < N - 1; ++k) row.middleCols(k * c, c) = D * W[k] - Mat::Identity(c, c);
    Eigen::JacobiSVD<Mat> rs(row), ds(D);
    f.err_op = std::max(f.err_op, rs.singularValues()(0));
    f.err_rms = std::max(f.err_rms, row.norm() / std::sqrt(double(N) * c));
    f.kappa_dec = std::max(f.kappa_dec, ds.singularValues()(0) / ds.singularValues()(c - 1));
  }
  for (int i = 0; i < N; ++i) {
    Eigen::JacobiSVD<Mat> es(Mat(E[i]));
    f.kappa_enc = std::max(f.kappa_enc, es.singularValues()(0) / es.singularValues()(c - 1));
  }
  (void)L;
  return f;
}

TEST(OptimizerObjective, EpsMatchesProtocolTable) {
  // PROTOCOL.md §7, eps, N = 4, c = 8, eps = 1e-3: err_op 1.63e-3, err_rms 8.16e-4, kappa 1.41e3.
  Evaluator ev(4, 8, Parametrisation::kShiftInvariant);
  const Eigen::VectorXd x = EpsBaseSequence(4, 8, 1e-3);
  const Figures f = ev.Analyse(x.data());
  EXPECT_NEAR(f.err_op / 1.63e-3, 1.0, 5e-3);
  EXPECT_NEAR(f.err_rms / 8.16e-4, 1.0, 5e-3);
  EXPECT_NEAR(f.kappa_dec / 1.41e3, 1.0, 5e-3);
}

TEST(OptimizerObjective, EpsExactForCUpToN) {
  // c = N: exact, kappa_dec = sqrt(2); c = 3 < N = 4: exact, kappa_dec = 2.41 (PROTOCOL.md §7).
  for (double eps : {1e-3, 0.1}) {
    Evaluator ev4(4, 4, Parametrisation::kShiftInvariant);
    const Eigen::VectorXd x4 = EpsBaseSequence(4, 4, eps);
    const Figures f4 = ev4.Analyse(x4.data());
    EXPECT_LT(f4.err_op, 1e-13);
    EXPECT_NEAR(f4.kappa_dec / std::sqrt(2.0), 1.0, 1e-10);
    Evaluator ev3(4, 3, Parametrisation::kShiftInvariant);
    const Eigen::VectorXd x3 = EpsBaseSequence(4, 3, eps);
    const Figures f3 = ev3.Analyse(x3.data());
    EXPECT_LT(f3.err_op, 1e-13);
    EXPECT_NEAR(f3.kappa_dec / 2.41, 1.0, 5e-3);
  }
}

TEST(OptimizerObjective, SchattenBoundsSpectral) {
  // ||R||_2 <= ||R||_S32 <= c^(1/32) ||R||_2 for a c-row block row R.
  for (auto [N, c] : {std::pair{4, 8}, std::pair{5, 8}, std::pair{3, 7}}) {
    Evaluator ev(N, c, Parametrisation::kShiftInvariant);
    const Eigen::VectorXd x = EpsBaseSequence(N, c, 1e-2);
    const auto op = ev.Evaluate(x.data(), Evaluator::ErrorNorm::kSpectral, false);
    const auto sp = ev.Evaluate(x.data(), Evaluator::ErrorNorm::kSchatten, false);
    for (int j = 0; j < N; ++j) {
      if (op.exact[j]) continue;
      EXPECT_GE(sp.log_err[j], op.log_err[j] - 1e-12);
      EXPECT_LE(sp.log_err[j], op.log_err[j] + std::log(double(c)) / 32 + 1e-12);
    }
  }
}

TEST(OptimizerObjective, RejectsBadSizes) {
  EXPECT_THROW(Evaluator(1, 4, Parametrisation::kShiftInvariant), InvalidArgument);
  EXPECT_THROW(Evaluator(4, 0, Parametrisation::kPerRank), InvalidArgument);
  EXPECT_THROW(EpsBaseSequence(4, 8, -1.0), InvalidArgument);
}

using Case = std::tuple<int, int, Parametrisation>;
class ObjectiveP : public ::testing::TestWithParam<Case> {};

TEST_P(ObjectiveP, FiguresMatchIndependentComputation) {
  const auto [N, c, p] = GetParam();
  Evaluator ev(N, c, p);
  const Eigen::VectorXd x = GenericPoint(ev, p, 0.05, 7);
  const Figures a = ev.Analyse(x.data()), b = Independent(ev, x);
  if (b.err_op < 1e-12) {  // exact by structure (N = 2): both at rounding level
    EXPECT_LT(a.err_op, 1e-12);
    EXPECT_LT(a.err_rms, 1e-12);
  } else {
    EXPECT_NEAR(a.err_op / b.err_op, 1.0, 1e-8);
    EXPECT_NEAR(a.err_rms / b.err_rms, 1.0, 1e-8);
  }
  EXPECT_NEAR(a.kappa_dec / b.kappa_dec, 1.0, 1e-8);
  EXPECT_NEAR(a.kappa_enc / b.kappa_enc, 1.0, 1e-8);
}

TEST_P(ObjectiveP, GradientsMatchFiniteDifferences) {
  const auto [N, c, p] = GetParam();
  Evaluator ev(N, c, p);
  const Eigen::VectorXd x = GenericPoint(ev, p, 0.05, 11);
  std::mt19937_64 rng(3);
  for (auto norm : {Evaluator::ErrorNorm::kFrobenius, Evaluator::ErrorNorm::kSpectral,
                    Evaluator::ErrorNorm::kSchatten}) {
    const Evaluator::Result r = ev.Evaluate(x.data(), norm, true);
    ASSERT_FALSE(r.singular);
    for (int trial = 0; trial < 3; ++trial) {
      const Eigen::VectorXd d = RandomUnitDirection(rng, x.size());
      const double h = 1e-6;
      const Eigen::VectorXd xp = x + h * d, xm = x - h * d;
      const auto rp = ev.Evaluate(xp.data(), norm, false), rm = ev.Evaluate(xm.data(), norm, false);
      auto check = [&](const char* what, int rank, double fp, double fm, const Eigen::VectorXd& g) {
        const double fd = (fp - fm) / (2 * h), an = g.dot(d);
        // Central differences: truncation O(h^2), rounding O(u / h) ~ 1e-10 in log-figures.
        EXPECT_NEAR(an, fd, 1e-6 * std::max(1.0, std::abs(fd)))
            << what << " rank " << rank << " N=" << N << " c=" << c;
      };
      for (int j = 0; j < N; ++j) {
        if (r.exact[j]) {  // one distinct window: exact, zero gradient by definition
          EXPECT_LT(r.log_err[j], std::log(1e-12));
          EXPECT_EQ(r.grad_log_err(j).norm(), 0.0);
        } else {
          check("log err", j, rp.log_err[j], rm.log_err[j], r.grad_log_err(j));
        }
        check("log kappa_dec", j, rp.log_kappa_dec[j], rm.log_kappa_dec[j],
              r.grad_log_kappa_dec(j));
        check("log kappa_enc", j, rp.log_kappa_enc[j], rm.log_kappa_enc[j],
              r.grad_log_kappa_enc(j));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ObjectiveP,
    ::testing::Values(
        Case{2, 1, Parametrisation::kShiftInvariant}, Case{2, 3, Parametrisation::kShiftInvariant},
        Case{4, 3, Parametrisation::kShiftInvariant}, Case{4, 8, Parametrisation::kShiftInvariant},
        Case{5, 7, Parametrisation::kShiftInvariant}, Case{3, 7, Parametrisation::kShiftInvariant},
        Case{2, 1, Parametrisation::kPerRank}, Case{4, 3, Parametrisation::kPerRank},
        Case{4, 6, Parametrisation::kPerRank}, Case{3, 5, Parametrisation::kPerRank}),
    [](const ::testing::TestParamInfo<Case>& tp) {
      return std::string("N") + std::to_string(std::get<0>(tp.param)) + "_c" +
             std::to_string(std::get<1>(tp.param)) +
             (std::get<2>(tp.param) == Parametrisation::kPerRank ? "_perrank" : "_shift");
    });

}  // namespace
}  // namespace cerar::design::opt
