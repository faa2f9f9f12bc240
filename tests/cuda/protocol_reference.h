#pragma once
// Independent host computation of what the protocol must produce (PROTOCOL.md §4, §9
// linearity): S_j = scale (g_j + sum_{i != j} D_j W_ij g_i), in float64, with a first-order
// rounding bound per element.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../common/random_design.h"
#include "cerar/format/design.h"

namespace cerar::test {

struct Expected {
  std::vector<double> value;  // n elements
  std::vector<double> bound;  // |result - value| <= bound (rounding in arithmetic with roundoff u)
};

// inputs[i] holds rank i's n elements. Packets are bounded by A = sum_i sum_k max_t |E_i[t,k]|
// |g_i[k]| (every vector on the ring is a sum of at most one contribution per rank); each
// observation collects at most c + 3N roundings of that size and the decoder c + 2 more, so
// |error| <= 2 (c + 3N + 2) u scale (|g_j| + sum_r |D_j[k,r]| A). Each rounding also has an
// absolute part of at most eta (half the type's subnormal spacing), carried through the decoder
// the same way: + 2 (c + 3N + 2) max(1, |scale|) (1 + sum_r |D_j[k,r]|) eta.
inline Expected ProtocolReference(const Design& d, const std::vector<std::vector<double>>& inputs,
                                  int j, double scale, double u, double eta) {
  const int N = d.N(), c = d.c();
  const std::size_t n = inputs[0].size(), m = (n + std::size_t(c) - 1) / std::size_t(c);
  auto comp = [&](int i, int k, std::size_t col) {
    const std::size_t idx = std::size_t(k) * m + col;
    return idx < n ? inputs[std::size_t(i)][idx] : 0.0;  // padding reads as zero
  };
  std::vector<double> emax(std::size_t(N) * std::size_t(c), 0.0);  // max_t |E_i[t,k]|
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < c; ++k)
      for (int t = 0; t < d.L(); ++t)
        emax[std::size_t(i * c + k)] = std::max(emax[std::size_t(i * c + k)], std::abs(d.encoder(i)(t, k)));
  Expected out{std::vector<double>(n), std::vector<double>(n)};
  const MatrixXd& D = d.decoder(j);
  std::vector<double> obs(static_cast<std::size_t>(c));
  for (std::size_t col = 0; col < m; ++col) {
    double A = 0;
    for (int i = 0; i < N; ++i)
      for (int k = 0; k < c; ++k) A += emax[std::size_t(i * c + k)] * std::abs(comp(i, k, col));
    // Observation r = sum_{i != j} W_ij[r, :] g_i, W_ij[r, :] = E_i[N - 2 + r - s_ij, :].
    for (int r = 0; r < c; ++r) {
      double o = 0;
      for (int i = 0; i < N; ++i) {
        if (i == j) continue;
        const int s = HopOffset(i, j, N);
        for (int k = 0; k < c; ++k) o += d.encoder(i)(N - 2 + r - s, k) * comp(i, k, col);
      }
      obs[std::size_t(r)] = o;
    }
    for (int k = 0; k < c; ++k) {
      const std::size_t idx = std::size_t(k) * m + col;
      if (idx >= n) continue;
      double v = inputs[std::size_t(j)][idx], mag = std::abs(v), dsum = 0;
      for (int r = 0; r < c; ++r) {
        v += D(k, r) * obs[std::size_t(r)];
        dsum += std::abs(D(k, r));
      }
      mag += dsum * A;
      out.value[idx] = scale * v;
      const double absolute = std::max(1.0, std::abs(scale)) * (1 + dsum) * eta;
      out.bound[idx] = 2.0 * (c + 3 * N + 2) * (u * std::abs(scale) * mag + absolute);
    }
  }
  return out;
}

// Random encoders and decoders: linearity (PROTOCOL.md §9) holds for any design.
inline Design RandomDesign(int N, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return Design::Create(test_common::RandomMatrices(N, c, rng), "random test design");
}

}  // namespace cerar::test
