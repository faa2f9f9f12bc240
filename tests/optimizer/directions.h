#pragma once
// Random unit directions for the central-difference checks of the optimiser's gradients.
#include <Eigen/Core>
#include <random>

namespace cerar::design::opt {

inline Eigen::VectorXd RandomUnitDirection(std::mt19937_64& rng, Eigen::Index n) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd d(n);
  for (Eigen::Index k = 0; k < n; ++k) d(k) = normal(rng);
  return d / d.norm();
}

}  // namespace cerar::design::opt
