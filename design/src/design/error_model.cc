// First-order finite-precision error model (docs/error-model.md has the derivation).
//
// Inputs are i.i.d. with unit variance. Every rounded operation z = fl(a op b) adds an
// independent error of variance kRoundingVariance * u^2 * Var(z): round-to-nearest leaves an
// absolute error uniform in +-ulp/2, and averaging (ulp / |z|)^2 over log-uniform mantissas gives
// u^2 / 3 * 0.541 = 0.18 u^2. Errors are propagated linearly to S_hat_j and summed in variance.
#include "error_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cerar/errors.h"
#include "parallel.h"

namespace cerar::design::detail {
namespace {

constexpr double kRoundingVariance = 0.18;  // times u^2, see above

int Mod(int a, int n) { return ((a % n) + n) % n; }

// Distinct windows of rank j with multiplicities (exact equality; PROTOCOL.md §6 structure).
struct Window {
  int i = 0;  // one rank whose window this is
  int s = 0;  // its hop offset s_ij
  int count = 0;
};

std::vector<Window> DistinctWindows(const std::vector<MatrixXd>& E, int j, int N, int c) {
  std::vector<Window> out;
  for (int i = 0; i < N; ++i) {
    if (i == j) continue;
    const int s = HopOffset(i, j, N);
    bool found = false;
    for (auto& w : out) {
      if (E[w.i].middleRows(N - 2 - w.s, c) == E[i].middleRows(N - 2 - s, c)) {
        ++w.count;
        found = true;
        break;
      }
    }
    if (!found) out.push_back({i, s, 1});
  }
  return out;
}

double ModelErrorInRange(int N, int c, const std::vector<MatrixXd>& E,
                         const std::vector<MatrixXd>& D, const std::vector<double>& err_rms_per_rank,
                         Arithmetic arithmetic);

double MaxAbs(const std::vector<MatrixXd>& matrices) {
  double m = 0;
  for (const MatrixXd& a : matrices)
    if (a.size() > 0) m = std::max(m, a.cwiseAbs().maxCoeff());
  return m;
}

}  // namespace

// The model is relative: it holds while every value stays in the arithmetic's normal range, and
// it is invariant under E -> 2^k E, D -> 2^-k D (exact in floating point). So the matrices are
// first checked against the range (outside it the prediction is +inf: the run overflows, or
// stores a matrix flushed to subnormals), then, where their entries are far from 1, rescaled
// by a power of two so that the squared norms below cannot overflow or underflow.
double ModelError(int N, int c, const std::vector<MatrixXd>& E, const std::vector<MatrixXd>& D,
                  const std::vector<double>& err_rms_per_rank, Arithmetic arithmetic) {
  if (static_cast<int>(E.size()) != N || static_cast<int>(D.size()) != N ||
      static_cast<int>(err_rms_per_rank.size()) != N) {
    throw InvalidArgument("error model: expected N = " + std::to_string(N) +
                          " encoders, decoders and err_rms values, got " +
                          std::to_string(E.size()) + ", " + std::to_string(D.size()) + ", " +
                          std::to_string(err_rms_per_rank.size()));
  }
  const double max_e = MaxAbs(E), max_d = MaxAbs(D);
  const double inf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(max_e) || !std::isfinite(max_d)) return inf;
  // The packets' type (float32 for every arithmetic but float64 and bfloat16), and whether E and
  // D are stored in it (float32, bfloat16) or kept in float64 (float64 and the wide ones).
  const bool narrow_matrices = arithmetic == Arithmetic::kFloat32 ||
                               arithmetic == Arithmetic::kBFloat16;
  const double largest = arithmetic == Arithmetic::kFloat64  ? std::numeric_limits<double>::max()
                         : arithmetic == Arithmetic::kBFloat16 ? 0x1.fep127
                                                                : double(std::numeric_limits<float>::max());
  const double smallest_normal = arithmetic == Arithmetic::kFloat64
                                     ? std::numeric_limits<double>::min()
                                     : double(std::numeric_limits<float>::min());  // bf16's too
  // A lap's value holds N encoded terms of unit-variance inputs, each at most sqrt(c) max_e.
  if (max_e * std::sqrt(double(c)) * N > largest) return inf;
  if (arithmetic != Arithmetic::kFloat64 && max_e > 0 && max_e < smallest_normal) return inf;
  if (narrow_matrices && (max_e > largest || max_d > largest || max_e < smallest_normal ||
                          max_d < smallest_normal))
    return inf;
  if (max_e == 0) return ModelErrorInRange(N, c, E, D, err_rms_per_rank, arithmetic);
  const int k = std::ilogb(max_e);
  if (std::abs(k) <= 64) return ModelErrorInRange(N, c, E, D, err_rms_per_rank, arithmetic);
  std::vector<MatrixXd> E2(E), D2(D);
  for (MatrixXd& a : E2) a *= std::ldexp(1.0, -k);
  for (MatrixXd& a : D2) a *= std::ldexp(1.0, k);
  return ModelErrorInRange(N, c, E2, D2, err_rms_per_rank, arithmetic);
}

namespace {

double ModelErrorInRange(int N, int c, const std::vector<MatrixXd>& E,
                         const std::vector<MatrixXd>& D, const std::vector<double>& err_rms_per_rank,
                         Arithmetic arithmetic) {
  const int L = c + N - 2;
  const double u = UnitRoundoff(arithmetic);
  const double q = kRoundingVariance * u * u;
  // float32+acc64: every result is computed in float64 and rounded once when stored; the
  // float64 work's own rounding (2^-53) is negligible beside it.
  const bool wide = arithmetic == Arithmetic::kFloat32Acc64 ||
                    arithmetic == Arithmetic::kFloat32Acc64Feedback ||
                    arithmetic == Arithmetic::kFloat32State64;
  // float32+state64: encoded vectors and observations are float64, never rounded; the packets
  // are, x(0) = fl(e(0)) included.
  const bool state64 = arithmetic == Arithmetic::kFloat32State64;
  // Feedback runs only where c > 2N (FeedsBackRounding); elsewhere the arithmetic is acc64's.
  const bool feedback = (arithmetic == Arithmetic::kFloat32Acc64Feedback || state64) &&
                        FeedsBackRounding(N, c);
  // Stored float64 matrices are exact in a float64 run (and in the wide one, which uses them);
  // otherwise E and D are rounded once.
  const double matrix_rounding =
      arithmetic == Arithmetic::kFloat64 || wide ? 0.0 : 1.0;

  // rn2[i][t] = ||E_i[t,:]||^2 = Var(e_i(t)); venc[i][t] = error variance of computing e_i(t)
  // as a left-to-right dot product of c terms (entry rounding, products, partial sums).
  std::vector<std::vector<double>> rn2(N, std::vector<double>(L)), venc = rn2;
  for (int i = 0; i < N; ++i) {
    for (int t = 0; t < L; ++t) {
      double partial = 0, partial_sums = 0;
      for (int k = 0; k < c; ++k) {
        partial += E[i](t, k) * E[i](t, k);
        if (k >= 1) partial_sums += partial;
      }
      rn2[i][t] = partial;
      venc[i][t] = state64 ? 0.0
                   : wide  ? q * partial  // the float64 dot product, rounded once
                        : q * ((1.0 + matrix_rounding) * partial + partial_sums);
    }
  }
  auto row_norm2 = [&](int i, int t) { return t >= 0 && t < L ? rn2[Mod(i, N)][t] : 0.0; };

  // Ring (PROTOCOL.md §2): x_i(t) = (e_i(t) + y_i(t-1)) - e_i(t-N). Lap-limited, x_i(t) holds N
  // contributions: Var X = sum_s ||E_{i-s}[t-s]||^2; the sum before the subtraction holds one more.
  // Rounding errors are not lap-limited: they ride the diagonal t - i = const forever, so the
  // error variance of y_j(t) is the chain sum R[j-1][t] over all hops since round 0.
  std::vector<std::vector<double>> R(N, std::vector<double>(L, 0.0)), hop = R;
  for (int t = 0; t < L; ++t) {
    for (int i = 0; i < N; ++i) {
      double X = 0;
      for (int s = 0; s < N; ++s) X += row_norm2(i - s, t - s);
      double h = 0;
      if (wide) {
        if (t >= 1 || state64) h += q * X;  // e_i(t) + (y_i(t-1) - e_i(t-N)), rounded once
      } else {
        if (t >= 1) h += q * (X + row_norm2(i, t - N));  // e_i(t) + y_i(t-1)
        if (t >= N) h += q * X;                          // ... - e_i(t-N)
      }
      hop[i][t] = h;
      R[i][t] = (t >= 1 ? R[Mod(i - 1, N)][t - 1] : 0.0) + h;
    }
  }
  // The ring's error in observation row r of rank j, y_j(t) with t = N-2+r, as the variance
  // ring_var[r] and the covariance ring_var[r] + m ring_slope[r] with row r + mN, which lies on
  // the same diagonal. Without feedback every hop since round 0 counts once: ring_var = R, slope
  // 0. With feedback the hop s places upstream (rank j-1-s, round t-s) counts 1 + K times,
  // K = floor((s + 1) / N): its owner has added it back K times since (docs/error-model.md).
  auto ring_terms = [&](int j, int r, double& ring_var, double& ring_slope) {
    const int t = N - 2 + r;
    if (!feedback) {
      ring_var = R[Mod(j - 1, N)][t];
      ring_slope = 0;
      return;
    }
    double s1 = 0, s2 = 0;  // sums of hop * w and hop * w^2, w = 1 + K
    for (int s = 0; s <= t; ++s) {
      const double w = 1 + (s + 1) / N;
      const double h = hop[Mod(j - 1 - s, N)][t - s];
      s1 += h * w;
      s2 += h * w * w;
    }
    ring_var = s2;
    ring_slope = s1;
  };

  std::vector<double> per_rank(N, 0.0);
  ParallelFor(N, [&](int j) {
    const std::vector<Window> windows = DistinctWindows(E, j, N, c);
    // Observation o_j[r] = y_j(t) - e_j(t-N+1), t = N-2+r: its variance Vo and error variance vo.
    std::vector<double> Vo(c, 0.0), vo(c, 0.0), ring_var(c), ring_slope(c);
    for (int r = 0; r < c; ++r) {
      ring_terms(j, r, ring_var[r], ring_slope[r]);
      const int t = N - 2 + r;
      double enc = 0;
      for (int i = 0; i < N; ++i) {
        if (i == j) continue;
        const int row = t - HopOffset(i, j, N);
        Vo[r] += rn2[i][row];
        enc += venc[i][row];
      }
      vo[r] = ring_var[r] + enc + (r >= 1 && !state64 ? q * Vo[r] : 0.0);  // stored o[r]
    }
    // Decode S_hat_j[k] = g_j[k] + sum_r D[k,r] o[r], left to right. Var of the partial sums
    // P_m = sum_{r<=m} D[k,r] o[r] = sum_i (sum_{r<=m} D[k,r] W_ij[r,:]) g_i.
    const MatrixXd& Dj = D[j];
    double rounding = 0;
    Eigen::RowVectorXd v(c);
    std::vector<double> partial_var(c);
    for (int k = 0; k < c; ++k) {
      double propagated = 0, entries = 0;
      for (int r = 0; r < c; ++r) {
        const double d2 = Dj(k, r) * Dj(k, r);
        propagated += d2 * vo[r];
        entries += d2 * Vo[r];
        // Rows N apart lie on one ring diagonal: row r + mN holds all of row r's ring error
        // (with feedback, added back m more times).
        for (int r2 = r + N, m = 1; r2 < c; r2 += N, ++m)
          propagated += 2 * Dj(k, r) * Dj(k, r2) * (ring_var[r] + m * ring_slope[r]);
      }
      std::fill(partial_var.begin(), partial_var.end(), 0.0);
      for (const Window& w : windows) {
        v.setZero();
        for (int m = 0; m < c; ++m) {
          v += Dj(k, m) * E[w.i].row(N - 2 + m - w.s);
          partial_var[m] += w.count * v.squaredNorm();
        }
      }
      double partial_sums = 0;
      for (int m = 1; m < c; ++m) partial_sums += partial_var[m];
      const double last = 1.0 + partial_var[c - 1];  // g_j + P, rounded when stored
      if (wide)  // the float64 decode: one rounding of the result
        rounding += propagated + q * last;
      else
        rounding += propagated + q * ((1.0 + matrix_rounding) * entries + partial_sums + last);
    }
    const double approximation = err_rms_per_rank[j] * err_rms_per_rank[j];
    per_rank[j] = std::sqrt(approximation + rounding / (double(N) * c));
  });
  return *std::max_element(per_rank.begin(), per_rank.end());
}

}  // namespace

double RoundingVarianceFactor() { return kRoundingVariance; }

std::map<std::string, double> ModelErrors(int N, int c, const std::vector<MatrixXd>& encoders,
                                          const std::vector<MatrixXd>& decoders,
                                          const std::vector<double>& err_rms_per_rank) {
  std::map<std::string, double> out;
  for (Arithmetic a : {Arithmetic::kFloat32, Arithmetic::kFloat64, Arithmetic::kBFloat16,
                       Arithmetic::kFloat32Acc64, Arithmetic::kFloat32Acc64Feedback,
                       Arithmetic::kFloat32State64}) {
    out[ToString(a)] = ModelError(N, c, encoders, decoders, err_rms_per_rank, a);
  }
  return out;
}

}  // namespace cerar::design::detail

namespace cerar::design {

// From figures alone (a design file without predicted_error): a coarse stand-in for the model,
// rounding ~ u * kappa_dec * sqrt(0.18 (2 L + c + 3)) (2 L ring roundings, c-term dot products).
double PredictedError(const Figures& figures, int N, int c, Arithmetic arithmetic) {
  const auto it = figures.predicted_error.find(ToString(arithmetic));
  if (it != figures.predicted_error.end()) return it->second;
  if (N < 2 || c < 1) {
    throw InvalidArgument("PredictedError: N = " + std::to_string(N) + ", c = " +
                          std::to_string(c) + ", expected N >= 2 and c >= 1");
  }
  const double L = c + N - 2;
  const double rounding = UnitRoundoff(arithmetic) * figures.kappa_dec *
                          std::sqrt(0.18 * (2 * L + c + 3));
  return std::sqrt(figures.err_rms * figures.err_rms + rounding * rounding);
}

}  // namespace cerar::design
