#pragma once
// Test designs built independently of cerar_design: random encoders or the real Fourier basis
// (the eps construction for c <= N), with least-squares decoders computed here with Eigen in
// double, and the reference output g_j + sum_{i != j} D_j W_ij g_i (PROTOCOL.md §4).
#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cerar/format/design_parts.h"
#include "cerar/runtime/transport.h"

namespace cerar::test {

inline MatrixXd Window(const std::vector<MatrixXd>& E, int N, int c, int i, int j) {
  return E[i].middleRows(N - 2 - HopOffset(i, j, N), c);
}

// D_j = (sum_{i != j} W_ij^T)(sum_{i != j} W_ij W_ij^T)^{-1}
inline MatrixXd LsDecoder(const std::vector<MatrixXd>& E, int N, int c, int j) {
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(c, c), B = Eigen::MatrixXd::Zero(c, c);
  for (int i = 0; i < N; ++i) {
    if (i == j) continue;
    const Eigen::MatrixXd W = Window(E, N, c, i, j);
    A += W.transpose();
    B += W * W.transpose();
  }
  // D B = A  <=>  B^T D^T = A^T
  const Eigen::MatrixXd Dt = B.transpose().fullPivLu().solve(A.transpose());
  return Dt.transpose();
}

inline Design WithLsDecoders(int N, int c, std::vector<MatrixXd> E, const std::string& name) {
  DesignParts p;
  p.N = N;
  p.c = c;
  for (int j = 0; j < N; ++j) p.decoders.push_back(LsDecoder(E, N, c, j));
  p.encoders = std::move(E);
  p.provenance.construction = name;
  return Design::Create(std::move(p), name);
}

// Gaussian encoders, entries N(0, 1/c).
inline Design RandomDesign(int N, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(double(c)));
  const int L = c + N - 2;
  std::vector<MatrixXd> E(N, MatrixXd(L, c));
  for (auto& e : E)
    for (int t = 0; t < L; ++t)
      for (int k = 0; k < c; ++k) e(t, k) = normal(rng);
  return WithLsDecoders(N, c, std::move(E), "random");
}

// Real Fourier basis of period N, f_0 … f_{c-1}, c <= N: E_i[t, :] = C(t - i). Exact when every
// window is invertible (c = N or c odd; PROTOCOL.md §6 with r* = 0).
inline Design FourierDesign(int N, int c) {
  const double pi = std::acos(-1.0);
  auto f = [&](int k, int tau) {
    if (k == 0) return 1.0;
    const int m = (k + 1) / 2;
    const double a = 2 * pi * m * tau / N;
    return (k % 2 == 1) ? std::cos(a) : std::sin(a);
  };
  const int L = c + N - 2;
  std::vector<MatrixXd> E(N, MatrixXd(L, c));
  for (int i = 0; i < N; ++i)
    for (int t = 0; t < L; ++t)
      for (int k = 0; k < c; ++k) E[i](t, k) = f(k, t - i);
  return WithLsDecoders(N, c, std::move(E), "fourier");
}

// max_{i != j} ||D_j W_ij - I||_max: how far from exact.
inline double MaxExactnessDefect(const Design& d) {
  double worst = 0;
  for (int j = 0; j < d.N(); ++j)
    for (int i = 0; i < d.N(); ++i) {
      if (i == j) continue;
      const MatrixXd W = Window(d.encoders(), d.N(), d.c(), i, j);
      worst = std::max(worst, (d.decoder(j) * W - MatrixXd::Identity(d.c(), d.c()))
                                  .cwiseAbs()
                                  .maxCoeff());
    }
  return worst;
}

// Inputs of all N ranks: i.i.d. N(0, 1), deterministic in (seed, rank), rounded to T.
template <typename T>
std::vector<std::vector<T>> Inputs(int N, std::size_t count, std::uint64_t seed) {
  std::vector<std::vector<T>> g(N, std::vector<T>(count));
  for (int i = 0; i < N; ++i) {
    std::mt19937_64 rng(seed * 1000003u + i);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& v : g[i]) v = static_cast<T>(normal(rng));
  }
  return g;
}

// Reference output of rank j in long double: g_j + sum_{i != j} (D_j W_ij) g_i, componentwise
// with zero padding. Also returns the magnitude scale ||g_j|| + sum_i ||D_j W_ij||_F ||g_i||
// against which rounding is measured.
template <typename T>
std::vector<long double> Reference(const Design& d, const std::vector<std::vector<T>>& g, int j,
                                   double* scale) {
  const int N = d.N(), c = d.c();
  const std::size_t n = g[j].size(), m = (n + c - 1) / c;
  std::vector<long double> out(g[j].begin(), g[j].end());
  auto norm = [](const std::vector<T>& v) {
    long double s = 0;
    for (T x : v) s += (long double)x * x;
    return double(std::sqrt(s));
  };
  double sc = norm(g[j]);
  for (int i = 0; i < N; ++i) {
    if (i == j) continue;
    const MatrixXd M = d.decoder(j) * Window(d.encoders(), N, c, i, j);
    sc += M.norm() * norm(g[i]);
    for (int k = 0; k < c; ++k)
      for (std::size_t col = 0; col < m; ++col) {
        if (k * m + col >= n) continue;
        long double acc = 0;
        for (int r = 0; r < c; ++r)
          if (r * m + col < n) acc += (long double)M(k, r) * g[i][r * m + col];
        out[k * m + col] += acc;
      }
  }
  if (scale) *scale = sc;
  return out;
}

template <typename T>
double DiffNorm(const std::vector<T>& a, const std::vector<long double>& b) {
  long double s = 0;
  for (std::size_t k = 0; k < a.size(); ++k) s += (a[k] - b[k]) * (a[k] - b[k]);
  return double(std::sqrt(s));
}

template <typename T>
constexpr double UnitRoundoff() {
  return std::is_same_v<T, float> ? 0x1p-24 : 0x1p-53;
}

}  // namespace cerar::test
