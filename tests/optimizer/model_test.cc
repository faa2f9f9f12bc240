// The optimiser's precision-aware objective (optimizer_model.h): the error model in matrix form
// against the toolkit's term-by-term model (error_model.cc, through MakeFromEncoders), and its
// analytic gradient against central finite differences.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <Eigen/QR>
#include <cmath>
#include <random>
#include <tuple>

#include "cerar/design/optimizer.h"
#include "cerar/design/toolkit.h"
#include "design/error_model.h"
#include "design/optimizer_model.h"
#include "design/optimizer_objective.h"
#include "directions.h"

namespace cerar::design::opt {
namespace {

using Norm = Evaluator::ErrorNorm;

// The eps point plus a seeded perturbation: generic, and with encoders of unequal row norms
// (the ring's rounding depends on them) and not shift-invariant when per rank.
Eigen::VectorXd GenericPoint(int N, int c, Parametrisation p, double eps, double noise,
                             unsigned seed) {
  Eigen::VectorXd x = EpsPoint(N, c, eps, p == Parametrisation::kPerRank);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int k = 0; k < x.size(); ++k) x(k) += noise * normal(rng);
  return x;
}

using Case = std::tuple<int, int, Parametrisation, Arithmetic>;
class ModelP : public ::testing::TestWithParam<Case> {};

TEST_P(ModelP, PredictedErrorMatchesTheToolkitModel) {
  const auto [N, c, p, arithmetic] = GetParam();
  const Evaluator ev(N, c, p, arithmetic);
  for (double eps : {0.3, 1e-2}) {
    const Eigen::VectorXd x = GenericPoint(N, c, p, eps, 0.02, 5);
    const Evaluator::Result r = ev.Evaluate(x.data(), Norm::kPredicted, false, false);
    double predicted = 0;
    for (double e : r.log_err) predicted = std::max(predicted, std::exp(e));
    Provenance prov;
    prov.construction = "test";
    const Design d = MakeFromEncoders(N, c, ev.Encoders(x.data()), prov, Precision::kFloat64);
    const double reference = d.figures()->predicted_error.at(ToString(arithmetic));
    EXPECT_NEAR(predicted / reference, 1.0, 1e-9) << "eps " << eps;
  }
}

TEST_P(ModelP, GradientMatchesFiniteDifferences) {
  const auto [N, c, p, arithmetic] = GetParam();
  const Evaluator ev(N, c, p, arithmetic);
  const Eigen::VectorXd x = GenericPoint(N, c, p, 0.05, 0.05, 11);
  const Evaluator::Result r = ev.Evaluate(x.data(), Norm::kPredicted, true, false);
  ASSERT_FALSE(r.singular);
  ASSERT_EQ(r.gradient.rows(), N);  // no kappa rows
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 3; ++trial) {
    const Eigen::VectorXd d = RandomUnitDirection(rng, x.size());
    const double h = 1e-6;
    const Eigen::VectorXd xp = x + h * d, xm = x - h * d;
    const auto rp = ev.Evaluate(xp.data(), Norm::kPredicted, false, false);
    const auto rm = ev.Evaluate(xm.data(), Norm::kPredicted, false, false);
    for (int j = 0; j < N; ++j) {
      const double fd = (rp.log_err[j] - rm.log_err[j]) / (2 * h);
      const double an = r.grad_log_err(j).dot(d);
      // Central differences: truncation O(h^2), rounding O(u / h) ~ 1e-10 in log figures.
      EXPECT_NEAR(an, fd, 1e-6 * std::max(1.0, std::abs(fd))) << "rank " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ModelP,
    ::testing::Values(Case{2, 1, Parametrisation::kShiftInvariant, Arithmetic::kFloat32},
                      Case{2, 3, Parametrisation::kPerRank, Arithmetic::kFloat32},
                      Case{4, 8, Parametrisation::kShiftInvariant, Arithmetic::kFloat32},
                      Case{4, 8, Parametrisation::kPerRank, Arithmetic::kBFloat16},
                      Case{3, 7, Parametrisation::kShiftInvariant, Arithmetic::kFloat64},
                      Case{5, 12, Parametrisation::kPerRank, Arithmetic::kFloat32},
                      Case{4, 3, Parametrisation::kPerRank, Arithmetic::kFloat32},
                      Case{3, 9, Parametrisation::kShiftInvariant, Arithmetic::kFloat32Acc64},
                      Case{4, 12, Parametrisation::kPerRank, Arithmetic::kFloat32Acc64},
                      Case{3, 9, Parametrisation::kShiftInvariant,
                           Arithmetic::kFloat32Acc64Feedback},
                      Case{4, 13, Parametrisation::kPerRank, Arithmetic::kFloat32Acc64Feedback},
                      Case{2, 5, Parametrisation::kPerRank, Arithmetic::kFloat32Acc64Feedback},
                      Case{3, 9, Parametrisation::kShiftInvariant, Arithmetic::kFloat32State64},
                      Case{4, 13, Parametrisation::kPerRank, Arithmetic::kFloat32State64},
                      Case{4, 6, Parametrisation::kPerRank, Arithmetic::kFloat32State64}),
    [](const ::testing::TestParamInfo<Case>& tp) {
      return std::string("N") + std::to_string(std::get<0>(tp.param)) + "_c" +
             std::to_string(std::get<1>(tp.param)) +
             (std::get<2>(tp.param) == Parametrisation::kPerRank ? "_perrank_" : "_shift_") +
             [](std::string name) {  // test names take no '+'
               for (char& ch : name)
                 if (ch == '+') ch = '_';
               return name;
             }(ToString(std::get<3>(tp.param)));
    });

// Scaling every encoder by s (D by 1/s) leaves a relative error unchanged; scaling one rank's
// encoder does not (its packets round against the others' in the ring).
TEST(Model, InvariantUnderScalingOnly) {
  const Evaluator ev(4, 8, Parametrisation::kPerRank);
  const Eigen::VectorXd x = GenericPoint(4, 8, Parametrisation::kPerRank, 1e-2, 0.01, 2);
  const auto base = ev.Evaluate(x.data(), Norm::kPredicted, false, false);
  const Eigen::VectorXd scaled = 8.0 * x;
  const auto s = ev.Evaluate(scaled.data(), Norm::kPredicted, false, false);
  Eigen::VectorXd one = x;
  one.head(one.size() / 4) *= 1e3;
  const auto o = ev.Evaluate(one.data(), Norm::kPredicted, false, false);
  double moved = 0;
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(s.log_err[j], base.log_err[j], 1e-12);
    moved = std::max(moved, std::abs(o.log_err[j] - base.log_err[j]));
  }
  EXPECT_GT(moved, 0.1);
}

}  // namespace
}  // namespace cerar::design::opt

namespace cerar::design::opt {
namespace {

// The decoder that minimises the model for given encoders is D = Vᵀ (G + M)^-1 (V: the sum of
// the windows; docs/optimizer.md §3b). At a float32 optimum M is far below the eigenvalues of G
// that matter, so it is the least-squares decoder to within 1e-3 in the predicted error: the
// optimiser keeps least-squares decoders and searches the encoders.
TEST(Model, LeastSquaresDecoderIsNearTheModelsOptimum) {
  const int N = 8, c = 16, L = c + N - 2;
  const double eps = BestEpsForTarget(N, c, Arithmetic::kFloat32, INFINITY).eps;
  const Eigen::VectorXd x = EpsPoint(N, c, eps, true);
  const Evaluator ev(N, c, Parametrisation::kPerRank);
  const std::vector<MatrixXd> E = ev.Encoders(x.data());
  std::vector<int> rows(N);
  for (int i = 0; i < N; ++i) rows[i] = i * L;
  const RoundingModel model(N, c, rows, Arithmetic::kFloat32);
  const ConstRowMap X(x.data(), N * L, c);
  const RoundingModel::Ring ring = model.Prepare(X);
  std::vector<MatrixXd> ls(N), optimal(N);
  std::vector<double> err_ls(N), err_opt(N);
  for (int j = 0; j < N; ++j) {
    Eigen::MatrixXd W(c, (N - 1) * c), V = Eigen::MatrixXd::Zero(c, c);
    for (int i = 0, k = 0; i < N; ++i) {
      if (i == j) continue;
      const int s = ((j - 1 - i) % N + N) % N;
      W.middleCols(k++ * c, c) = E[i].middleRows(N - 2 - s, c);
      V += E[i].middleRows(N - 2 - s, c);
    }
    const Eigen::HouseholderQR<Eigen::MatrixXd> qr(W.transpose());
    const Eigen::MatrixXd Rq = qr.matrixQR().topRows(c).triangularView<Eigen::Upper>();
    const Eigen::MatrixXd G = W * W.transpose();
    ls[j] = G.llt().solve(V).transpose();  // (G^-1 V)ᵀ = Vᵀ G^-1
    Eigen::MatrixXd T(c, (N - 1) * c);
    for (int k = 0; k < N - 1; ++k) T.middleCols(k * c, c).setIdentity();
    const Eigen::MatrixXd R = ls[j] * W - T, Wpinv = W.transpose() * G.inverse();
    const auto rounding = model.Rank(j, ring, RoundingModel::Decoding{W, ls[j], Wpinv, R, Rq});
    optimal[j] = (G + rounding.M).llt().solve(V).transpose();
    err_ls[j] = R.norm() / std::sqrt(double(N) * c);
    err_opt[j] = (optimal[j] * W - T).norm() / std::sqrt(double(N) * c);
  }
  const double p_ls = detail::ModelError(N, c, E, ls, err_ls, Arithmetic::kFloat32);
  const double p_opt = detail::ModelError(N, c, E, optimal, err_opt, Arithmetic::kFloat32);
  EXPECT_LE(p_opt, p_ls * (1 + 1e-12));  // it is the minimiser
  EXPECT_NEAR(p_opt / p_ls, 1.0, 1e-3);
}

}  // namespace
}  // namespace cerar::design::opt
