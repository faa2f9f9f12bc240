#pragma once
// Helpers for the design tests: (N, c) lists, parameter names, and independent computations
// (windows from the encoders per PROTOCOL.md §4 with the one HopOffset, random encoders).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"

namespace cerar::design::test {

using NC = std::pair<int, int>;

inline std::string NcName(const testing::TestParamInfo<NC>& info) {
  std::string name = "N";  // appended step by step (GCC 12 -Wrestrict false positive on a + b)
  name += std::to_string(info.param.first);
  name += "_c";
  name += std::to_string(info.param.second);
  return name;
}

inline int RStar(int N, int c) { return (c + N - 1) / N - 1; }

// W_ij per PROTOCOL.md §4, straight from E_i (not via Design::window).
inline Eigen::MatrixXd WindowOf(const std::vector<MatrixXd>& E, int i, int j, int N, int c) {
  return E[i].block(N - 2 - HopOffset(i, j, N), 0, c, c);
}

inline std::vector<MatrixXd> RandomEncoders(int N, int c, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<MatrixXd> E(N, MatrixXd(c + N - 2, c));
  for (auto& m : E)
    for (Eigen::Index r = 0; r < m.rows(); ++r)
      for (Eigen::Index k = 0; k < m.cols(); ++k) m(r, k) = normal(rng);
  return E;
}

// max_digits defaults to 50 here: one high-precision rung, figures not certified, as cheap as
// before the ladder. Tests of certification (precision_test.cc and a few others) pass
// kDefaultMaxDigits.
inline Design Make(Construction k, int N, int c, double eps, Precision p = Precision::kAuto,
                   int max_digits = 50) {
  ConstructionOptions o;
  o.construction = k;
  o.N = N;
  o.c = c;
  o.eps = eps;
  o.precision = p;
  o.max_digits = max_digits;
  return MakeConstruction(o);
}

}  // namespace cerar::design::test
