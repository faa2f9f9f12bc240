#pragma once
// Random encoders and decoders in [-1, 1], shared by the test suites that need a design without
// the construction library (format, cuda). Linearity (PROTOCOL.md §9) holds for any design, so
// the protocol can be checked on these.
#include <cstdint>
#include <random>

#include "cerar/format/design_parts.h"

namespace cerar::test_common {

// N encoders (L x c) and N decoders (c x c), entries drawn from `rng` in row-major order.
inline DesignParts RandomMatrices(int N, int c, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  DesignParts parts;
  parts.N = N;
  parts.c = c;
  for (int i = 0; i < N; ++i) {
    MatrixXd E(c + N - 2, c), D(c, c);
    for (Eigen::Index k = 0; k < E.size(); ++k) E.data()[k] = u(rng);
    for (Eigen::Index k = 0; k < D.size(); ++k) D.data()[k] = u(rng);
    parts.encoders.push_back(E);
    parts.decoders.push_back(D);
  }
  parts.provenance.construction = "random";
  return parts;
}

}  // namespace cerar::test_common
