#pragma once
// The numerical engine, templated on the scalar type S (double, a 50-digit Boost.Multiprecision
// float, or an MPFR float of run-time precision). Included only by engine_float64.cc,
// engine_mp50.cc and engine_mpfr.cc, each of which defines PrecisionName<S>() for its type.
//
// Structure exploited for speed (PROTOCOL.md §6): for rank j the windows W_ij, i != j, are
// grouped by exact equality. In a shift-invariant design there are at most two distinct windows
// (one for i < j, one for i > j), so the decoder and the figures of a rank cost O(c^3)
// instead of O(N c^3), and the err_op eigenproblem is c x c.
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cerar/errors.h"
#include "engine.h"
#include "parallel.h"
#include "text.h"

namespace cerar::design::detail {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

// "float64", "mp50", "mp100", ...: defined by the translation unit that instantiates S.
template <class S>
std::string PrecisionName();

template <class S>
double ToDouble(const S& x) {
  return static_cast<double>(x);
}

// base^e for an integer e by repeated squaring (log2|e| roundings, no log/exp).
template <class S>
S IntPow(S base, long long e) {
  const bool negative = e < 0;
  unsigned long long n = negative ? static_cast<unsigned long long>(-e) : e;
  S result(1);
  while (n != 0) {
    if (n & 1u) result *= base;
    base *= base;
    n >>= 1;
  }
  return negative ? S(1) / result : result;
}

// Index p of the real Fourier function f_p (PROTOCOL.md §6) that column k = q N + p' of the eps
// construction uses. Normally p = p'. A partial last cluster with an even number of columns
// k_last < N takes the complete cos/sin pairs f_1 ... f_{k_last} and leaves out f_0 = 1: ending
// on a cosine without its sine makes a window exactly singular whenever that cosine's period is
// odd (consecutive samples cannot tell it from its shift), e.g. (N, c) = (3, 2), (6, 4).
inline int EpsFourierIndex(int N, int c, int k) {
  const int r_star = (c + N - 1) / N - 1;  // ceil(c / N) - 1
  const int last = c - r_star * N;         // columns in the last cluster, 1 ... N
  const int q = k / N, p = k % N;
  return q == r_star && last < N && last % 2 == 0 ? p + 1 : p;
}

// C(tau) for tau = -(N-1) ... L-1 in row tau + N - 1 (PROTOCOL.md §6), evaluated in S.
template <class S>
Mat<S> BaseSequence(Construction construction, int N, int c, double eps) {
  using std::acos;
  using std::cos;
  using std::exp;
  using std::sin;
  const int L = c + N - 2;
  const int rows = L + N - 1;
  Mat<S> C(rows, c);
  const S pi = acos(S(-1));
  const S eps_s(eps);
  if (construction == Construction::kEps) {
    const int r_star = (c + N - 1) / N - 1;  // ceil(c / N) - 1
    for (int k = 0; k < c; ++k) {
      const int q = k / N, p = EpsFourierIndex(N, c, k);  // column k = q N + p'
      const S lambda = S(q) - S(r_star) / 2;
      const int m = (p + 1) / 2;  // f_p: p = 0 -> 1, odd p -> cos(2 pi m tau / N), even -> sin
      for (int row = 0; row < rows; ++row) {
        const long long tau = row - (N - 1);
        S f(1);
        if (p != 0) {
          // Reduce m tau mod N exactly in integers so the angle stays in [0, 2 pi).
          const long long phase = ((m * tau) % N + N) % N;
          const S angle = 2 * pi * S(phase) / S(N);
          f = (p % 2 == 1) ? S(cos(angle)) : S(sin(angle));
        }
        C(row, k) = S(exp(eps_s * lambda * S(tau))) * f;
      }
    }
  } else {
    for (int k = 0; k < c; ++k) {
      const S x = cos(S(2 * k + 1) * pi / S(2 * c));  // Chebyshev point
      const S alpha = S(1) + eps_s * x;
      for (int row = 0; row < rows; ++row) C(row, k) = IntPow(alpha, row - (N - 1));
    }
  }
  for (int row = 0; row < rows; ++row) {
    for (int k = 0; k < c; ++k) {
      if (!std::isfinite(ToDouble(C(row, k)))) {
        throw NumericalError(ToString(construction) + " construction N = " + std::to_string(N) +
                             ", c = " + std::to_string(c) + ", eps = " + Num(eps) +
                             ": C(" + std::to_string(row - (N - 1)) + ")[" + std::to_string(k) +
                             "] is not a finite float64 value (eps too large)");
      }
    }
  }
  return C;
}

// E_i[t, :] = C(t - i), t = 0 ... L-1.
template <class S>
std::vector<Mat<S>> EncodersFromSequence(const Mat<S>& C, int N, int c) {
  const int L = c + N - 2;
  std::vector<Mat<S>> encoders;
  encoders.reserve(N);
  for (int i = 0; i < N; ++i) encoders.push_back(C.middleRows(N - 1 - i, L));
  return encoders;
}

// The distinct windows W_ij (i != j) of rank j and how many ranks i share each.
template <class S>
struct WindowGroup {
  std::vector<Mat<S>> windows;
  std::vector<int> counts;
};

template <class S>
WindowGroup<S> RankWindows(const std::vector<Mat<S>>& encoders, int j, int N, int c) {
  WindowGroup<S> group;
  for (int i = 0; i < N; ++i) {
    if (i == j) continue;
    Mat<S> W = encoders[i].middleRows(N - 2 - HopOffset(i, j, N), c);
    bool found = false;
    for (std::size_t g = 0; g < group.windows.size() && !found; ++g) {
      if (group.windows[g] == W) {
        ++group.counts[g];
        found = true;
      }
    }
    if (!found) {
      group.windows.push_back(std::move(W));
      group.counts.push_back(1);
    }
  }
  return group;
}

// D_j = (sum W^T)(sum W W^T)^{-1} (PROTOCOL.md §4), computed as the least-squares solution of
// the stacked system [sqrt(n_g) W_g^T] X = [sqrt(n_g) I], X = D_j^T, by column-pivoted
// Householder QR: the same minimiser, without squaring the condition number as forming the Gram
// matrix would. The QR's numerical rank (Eigen's default threshold, c * unit roundoff relative
// to the largest pivot) detects a Gram matrix that is singular *in this precision*: the ladder
// (ladder.h) decides between singular and ill-conditioned by trying higher ones.
template <class S>
Mat<S> LeastSquaresDecoder(const WindowGroup<S>& group, int j, int N, int c) {
  using std::sqrt;
  const int G = static_cast<int>(group.windows.size());
  Mat<S> A(G * c, c), B(G * c, c);
  for (int g = 0; g < G; ++g) {
    const S w = sqrt(S(group.counts[g]));
    A.middleRows(g * c, c) = w * group.windows[g].transpose();
    B.middleRows(g * c, c) = w * Mat<S>::Identity(c, c);
  }
  Eigen::ColPivHouseholderQR<Mat<S>> qr(A);
  if (qr.rank() < c) {
    throw PrecisionLimit("least-squares decoder of rank j = " + std::to_string(j) + " (N = " +
                             std::to_string(N) + ", c = " + std::to_string(c) +
                             "): the Gram matrix sum_{i!=j} W_ij W_ij^T (" + std::to_string(c) +
                             " x " + std::to_string(c) + ") is singular in " + PrecisionName<S>() +
                             ": numerical rank " + std::to_string(qr.rank()) + " < c = " +
                             std::to_string(c),
                         "numerical rank " + std::to_string(qr.rank()) + " < c = " +
                             std::to_string(c) + " for rank j = " + std::to_string(j),
                         true);
  }
  Mat<S> D = qr.solve(B).transpose();
  for (Eigen::Index r = 0; r < D.rows(); ++r) {
    for (Eigen::Index k = 0; k < D.cols(); ++k) {
      if (!std::isfinite(ToDouble(D(r, k)))) {
        throw PrecisionLimit("least-squares decoder of rank j = " + std::to_string(j) +
                                 ": D_j[" + std::to_string(r) + "][" + std::to_string(k) +
                                 "] is not a finite float64 value (" + PrecisionName<S>() + ")",
                             "D_j of rank j = " + std::to_string(j) + " overflows float64",
                             false);
      }
    }
  }
  return D;
}

// kappa_2(M) = sigma_max / sigma_min over the min(rows, cols) singular values.
// float64: divide-and-conquer SVD; +inf only when sigma_min is 0. Its sigma_min carries an
// absolute error ~ n u sigma_max, so kappa near 1/u is rounding: the callers refuse float64
// figures with kappa u above 1e-2 of the error (RefuseUntrustedFloat64, make.cc), which a rank
// rule here would turn into "singular" for designs that are only ill-conditioned (kappa 3e14).
// Multiprecision: +inf when M is numerically singular in this precision (sigma_min <=
// n u sigma_max, the QR's rank rule), where the ladder tries more digits. A Jacobi SVD costs
// 5-10x more there, so: eigenvalues of the Gram matrix G = M^T M. lambda_min(G) carries an
// absolute error ~ n u lambda_max, so that is trusted only while it leaves 20 digits (kappa below
// about 1e-10 u^-1/2: 1e15 in 50 digits). Beyond, sigma_min = 1 / ||R^-1||_2 from a Householder
// QR M = Q R (same singular values; R^-1 by back substitution), accurate to ~ u kappa instead of
// u kappa^2, so kappa resolves up to ~ u^-1 in every precision of the ladder.
template <class S>
double Kappa(const Mat<S>& M) {
  const double inf = std::numeric_limits<double>::infinity();
  if constexpr (std::is_same_v<S, double>) {
    Eigen::BDCSVD<Mat<double>> svd(M);
    const auto& sv = svd.singularValues();
    const double smin = sv(sv.size() - 1), smax = sv(0);
    if (!(smin > 0)) return inf;
    return smax / smin;
  } else {
    using std::sqrt;
    const bool tall = M.rows() >= M.cols();
    const Eigen::Index n = std::min(M.rows(), M.cols());
    // Lower triangle only (half the products; the eigensolver reads no more).
    Mat<S> G = Mat<S>::Zero(n, n);
    if (tall) {
      G.template selfadjointView<Eigen::Lower>().rankUpdate(M.transpose());
    } else {
      G.template selfadjointView<Eigen::Lower>().rankUpdate(M);
    }
    Eigen::SelfAdjointEigenSolver<Mat<S>> eig(G, Eigen::EigenvaluesOnly);
    const auto& ev = eig.eigenvalues();  // ascending
    const S lmin = ev(0), lmax = ev(n - 1);
    if (!(lmax > 0)) return inf;  // M = 0
    const S u = Eigen::NumTraits<S>::epsilon();
    if (lmin >= S(1e20) * S(n) * u * lmax) return ToDouble(S(sqrt(lmax / lmin)));
    Eigen::HouseholderQR<Mat<S>> qr(tall ? M : Mat<S>(M.transpose()));
    const Mat<S> R = qr.matrixQR().topRows(n).template triangularView<Eigen::Upper>();
    for (Eigen::Index k = 0; k < n; ++k) {
      if (R(k, k) == S(0)) return inf;
    }
    const Mat<S> Rinv =
        R.template triangularView<Eigen::Upper>().solve(Mat<S>::Identity(n, n));
    Eigen::SelfAdjointEigenSolver<Mat<S>> inv(Rinv.transpose() * Rinv, Eigen::EigenvaluesOnly);
    const S smax = sqrt(lmax), smin = S(1) / sqrt(inv.eigenvalues()(n - 1));
    if (!(smin > S(n) * u * smax)) return inf;
    return ToDouble(S(smax / smin));
  }
}

struct RankFigures {
  double err_op = 0, err_rms = 0, kappa_dec = 0;
};

// err_op_j = sqrt(lambda_max(sum_i Delta_ij Delta_ij^T)), err_rms_j = ||Delta_j||_F / sqrt(N c).
template <class S>
RankFigures FiguresOfRank(const Mat<S>& D, const WindowGroup<S>& group, int N, int c) {
  using std::sqrt;
  Mat<S> P = Mat<S>::Zero(c, c);
  S frob2(0);
  for (std::size_t g = 0; g < group.windows.size(); ++g) {
    Mat<S> Delta = D * group.windows[g];
    Delta.diagonal().array() -= S(1);
    frob2 += S(group.counts[g]) * Delta.squaredNorm();
    P.template selfadjointView<Eigen::Lower>().rankUpdate(Delta, S(group.counts[g]));
  }
  Eigen::SelfAdjointEigenSolver<Mat<S>> eig(P, Eigen::EigenvaluesOnly);
  S lmax = eig.eigenvalues()(c - 1);
  if (lmax < 0) lmax = 0;  // rounding of a PSD matrix
  RankFigures f;
  f.err_op = ToDouble(S(sqrt(lmax)));
  f.err_rms = ToDouble(S(sqrt(frob2 / S(N * c))));
  f.kappa_dec = Kappa(D);
  return f;
}

template <class S>
Figures AnalyseT(int N, int c, const std::vector<Mat<S>>& E, const std::vector<Mat<S>>& D) {
  Figures f;
  f.precision = PrecisionName<S>();
  f.err_op_per_rank.assign(N, 0);
  f.err_rms_per_rank.assign(N, 0);
  f.kappa_dec_per_rank.assign(N, 0);
  f.kappa_enc_per_rank.assign(N, 0);
  ParallelFor(2 * N, [&](int task) {
    if (task < N) {
      const int j = task;
      const RankFigures r = FiguresOfRank(D[j], RankWindows(E, j, N, c), N, c);
      f.err_op_per_rank[j] = r.err_op;
      f.err_rms_per_rank[j] = r.err_rms;
      f.kappa_dec_per_rank[j] = r.kappa_dec;
    } else {
      f.kappa_enc_per_rank[task - N] = Kappa(E[task - N]);
    }
  });
  for (int j = 0; j < N; ++j) {
    f.err_op = std::max(f.err_op, f.err_op_per_rank[j]);
    f.err_rms = std::max(f.err_rms, f.err_rms_per_rank[j]);
    f.kappa_dec = std::max(f.kappa_dec, f.kappa_dec_per_rank[j]);
    f.kappa_enc = std::max(f.kappa_enc, f.kappa_enc_per_rank[j]);
  }
  return f;
}

template <class S>
std::vector<MatrixXd> ToFloat64(const std::vector<Mat<S>>& matrices) {
  std::vector<MatrixXd> out;
  out.reserve(matrices.size());
  for (const auto& m : matrices) out.push_back(m.template cast<double>());
  return out;
}

template <class S>
std::vector<Mat<S>> FromFloat64(const std::vector<MatrixXd>& matrices) {
  std::vector<Mat<S>> out;
  out.reserve(matrices.size());
  for (const auto& m : matrices) out.push_back(m.template cast<S>());
  return out;
}

// Decoders in S for encoders in S; then figures of the unrounded and of the rounded matrices.
template <class S>
Derivation DeriveT(int N, int c, const std::vector<Mat<S>>& E) {
  std::vector<Mat<S>> D(N);
  ParallelFor(N, [&](int j) { D[j] = LeastSquaresDecoder(RankWindows(E, j, N, c), j, N, c); });
  Derivation out;
  out.encoders = ToFloat64(E);
  out.decoders = ToFloat64(D);
  out.exact = AnalyseT(N, c, E, D);
  if constexpr (std::is_same_v<S, double>) {
    out.stored = out.exact;
  } else {
    out.stored = AnalyseT(N, c, FromFloat64<S>(out.encoders), FromFloat64<S>(out.decoders));
  }
  return out;
}

template <class S>
Derivation DeriveConstructionT(Construction construction, int N, int c, double eps) {
  return DeriveT<S>(N, c, EncodersFromSequence(BaseSequence<S>(construction, N, c, eps), N, c));
}

}  // namespace cerar::design::detail
