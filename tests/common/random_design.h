#pragma once
// Random encoders and decoders in [-1, 1], shared by the test suites that need a design without
// the construction library (format, cuda). Linearity (PROTOCOL.md §9) holds for any design, so
// the protocol can be checked on these.
#include <cstdint>
#include <random>

#include "cerar/format/design_parts.h"

namespace cerar::test_common {

// A rows x cols matrix, entries in [-1, 1] drawn from `rng` in row-major order.
inline MatrixXd RandomMatrix(int rows, int cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  MatrixXd A(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k) A(r, k) = u(rng);
  return A;
}

// N encoders (L x c) and N decoders (c x c), entries drawn from `rng` in row-major order.
inline DesignParts RandomMatrices(int N, int c, std::mt19937_64& rng) {
  DesignParts parts;
  parts.N = N;
  parts.c = c;
  for (int i = 0; i < N; ++i) {
    MatrixXd E = RandomMatrix(c + N - 2, c, rng);
    parts.encoders.push_back(E);
    parts.decoders.push_back(RandomMatrix(c, c, rng));
  }
  parts.provenance.construction = "random";
  return parts;
}

}  // namespace cerar::test_common
