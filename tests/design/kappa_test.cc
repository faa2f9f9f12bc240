// detail::Kappa in float64: the condition number every float64 figure reports, against matrices
// of known singular values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "design/engine_impl.h"

namespace cerar::design::test {
namespace {

// Q1 diag(1, ..., 1, s) Q2 with random orthogonal Q1, Q2: kappa is 1/s exactly, and the SVD
// sees a full matrix.
Eigen::MatrixXd WithSingularValues(int n, double s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  auto orthogonal = [&] {
    Eigen::MatrixXd a(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a(i, j) = normal(rng);
    return Eigen::MatrixXd(Eigen::HouseholderQR<Eigen::MatrixXd>(a).householderQ());
  };
  Eigen::VectorXd sv = Eigen::VectorXd::Ones(n);
  sv(n - 1) = s;
  return orthogonal() * sv.asDiagonal() * orthogonal();
}

TEST(Kappa, Float64ResolvesWhatItCan) {
  for (const double s : {1e-2, 1e-6, 1e-10}) {
    const double kappa = detail::Kappa(WithSingularValues(8, s, 1));
    // Forward error of sigma_min from the SVD: ~ n u sigma_max, relative ~ n u / s.
    EXPECT_NEAR(kappa * s, 1.0, 1e-4) << "s = " << s;
  }
}

}  // namespace
}  // namespace cerar::design::test
