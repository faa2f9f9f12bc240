// The error model of docs/error-model.md in the matrix form the optimiser differentiates
// (optimizer_model.h; derivation in docs/optimizer.md §3b).
#include "design/optimizer_model.h"

#include <algorithm>
#include <utility>

#include "design/error_model.h"

namespace cerar::design::opt {
namespace {

int Mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

RoundingModel::RoundingModel(int N, int c, std::vector<int> encoder_rows, Arithmetic arithmetic)
    : N_(N), c_(c), L_(c + N - 2), encoder_rows_(std::move(encoder_rows)) {
  const double u = UnitRoundoff(arithmetic);
  q_ = detail::RoundingVarianceFactor() * u * u;
  state64_ = arithmetic == Arithmetic::kFloat32State64;
  wide_ = arithmetic == Arithmetic::kFloat32Acc64 ||
          arithmetic == Arithmetic::kFloat32Acc64Feedback || state64_;
  feedback_ = (arithmetic == Arithmetic::kFloat32Acc64Feedback || state64_) &&
              FeedsBackRounding(N, c);
  if (N < 2 || c < 1) return;  // the Evaluator rejects these sizes
  // Stored float64 matrices are exact in a float64 run; otherwise E and D are rounded once.
  const double entry = arithmetic == Arithmetic::kFloat64 ? 1.0 : 2.0;
  // Encode e_i(t) = sum_k E[t,k] g[k] left to right: entry and product rounding (entry) on every
  // term, and term k is in the partial sums P_m, m = max(k, 1) .. c-1. Wide: the float64 dot
  // product is rounded once, Var = q ||E_i[t,:]||^2.
  beta_.resize(c);
  // State64: e_i(t) is kept in float64, never rounded.
  for (int k = 0; k < c; ++k)
    beta_(k) = state64_ ? 0.0 : wide_ ? 1.0 : entry + (c - std::max(k, 1));
  // Decode S[k] = g[k] + sum_r D[k,r] o[r]: partial sum P_m rounded once for m = 1 .. c-1 and
  // once more when g[k] is added (m = c-1; for c = 1 that is the only rounding), so
  // sum_m w_m Var P_m = sum_{r,r'} D[k,r] D[k,r'] G[r,r'] Ω[r,r'], Ω[r,r'] = sum_{m >= max} w_m.
  // The diagonal adds entry and product rounding (entry times Var o[r] = G[r,r]) and the
  // subtraction that forms o[r] for r >= 1 (q Var o[r] into the observation's error).
  std::vector<double> tail(c + 1, 0.0);  // tail[m] = sum_{m' >= m} w_m'
  // Wide: only the stored result is rounded (m = c-1), and D is the float64 one (no entry or
  // product rounding); the observation's subtraction stays.
  for (int m = c - 1; m >= 0; --m) {
    const double w = (m >= 1 && !wide_ ? 1.0 : 0.0) + (m == c - 1 ? 1.0 : 0.0);
    tail[m] = tail[m + 1] + w;
  }
  omega_.resize(c, c);
  for (int r = 0; r < c; ++r)
    for (int s = 0; s < c; ++s) omega_(r, s) = tail[std::max(r, s)];
  // State64 keeps o[r] in float64: no rounding when it is formed.
  for (int r = 0; r < c; ++r)
    omega_(r, r) += (wide_ ? 0.0 : entry) + (r >= 1 && !state64_ ? 1.0 : 0.0);
}

RoundingModel::Ring RoundingModel::Prepare(const ConstRowMap& X) const {
  const int N = N_, L = L_;
  Ring ring;
  ring.n2.resize(N, L);
  ring.venc.resize(N, L);
  ring.R.resize(N, L);
  for (int i = 0; i < N; ++i)
    for (int t = 0; t < L; ++t) {
      const auto e = X.row(encoder_rows_[i] + t);
      ring.n2(i, t) = e.squaredNorm();
      ring.venc(i, t) = q_ * (beta_.array() * e.array().square()).sum();
    }
  ring.hop.resize(N, L);
  auto n2 = [&](int i, int t) { return t >= 0 ? ring.n2(Mod(i, N), t) : 0.0; };
  // x_i(t) = (e_i(t) + y_i(t-1)) - e_i(t-N): lap-limited it holds N contributions, the sum
  // before the subtraction one more; each rounding rides the diagonal t - i = const for ever.
  for (int t = 0; t < L; ++t)
    for (int i = 0; i < N; ++i) {
      double X_it = 0;
      for (int s = 0; s < N; ++s) X_it += n2(i - s, t - s);
      double hop = 0;
      if (wide_) {
        if (t >= 1 || state64_) hop += q_ * X_it;  // rounded once (state64: x(0) = fl(e(0)))
      } else {
        if (t >= 1) hop += q_ * (X_it + n2(i, t - N));
        if (t >= N) hop += q_ * X_it;
      }
      ring.hop(i, t) = hop;
      ring.R(i, t) = (t >= 1 ? ring.R(Mod(i - 1, N), t - 1) : 0.0) + hop;
    }
  return ring;
}

RoundingModel::RankRounding RoundingModel::Rank(int j, const Ring& ring,
                                                const Decoding& d) const {
  const int N = N_, c = c_;
  RankRounding out;
  // a_r: the ring's error in y_j(t), t = N-2+r, and the encode errors of the N-1 packets that
  // observation row r holds (rank i's row t - s_ij).
  // ring_var(r), ring_slope(r): the ring's error variance in row r, and the slope of its
  // covariance ring_var(r) + m ring_slope(r) with row r + mN (error_model.cc, ring_terms).
  out.a.resize(c);
  Eigen::VectorXd ring_var(c), ring_slope = Eigen::VectorXd::Zero(c);
  for (int r = 0; r < c; ++r) {
    const int t = N - 2 + r;
    ring_var(r) = ring.R(Mod(j - 1, N), t);
    if (feedback_) {
      // The hop s places upstream counts w = 1 + floor((s + 1) / N) times.
      ring_var(r) = 0;
      for (int s = 0; s <= t; ++s) {
        const double w = 1 + (s + 1) / N, h = ring.hop(Mod(j - 1 - s, N), t - s);
        ring_var(r) += h * w * w;
        ring_slope(r) += h * w;
      }
    }
    double a = ring_var(r);
    for (int i = 0; i < N; ++i)
      if (i != j) a += ring.venc(i, t - Mod(j - 1 - i, N));
    out.a(r) = a;
  }
  const auto RqU = d.Rq.triangularView<Eigen::Upper>();
  const Eigen::MatrixXd G = RqU.transpose() * d.Rq;
  out.M = q_ * G.cwiseProduct(omega_);
  out.M.diagonal() += out.a;
  // Rows N apart lie on one diagonal of the ring: row r + mN holds all of row r's ring error
  // (with feedback, added back m more times).
  for (int r = 0; r < c; ++r) {
    for (int r2 = r + N, m = 1; r2 < c; r2 += N, ++m) {
      const double shared = ring_var(r) + m * ring_slope(r);
      out.M(r, r2) += shared;
      out.M(r2, r) += shared;
    }
  }
  out.value = (d.D * out.M).cwiseProduct(d.D).sum() + q_ * c;
  return out;
}

RoundingModel::StackGradient RoundingModel::Gradient(const Decoding& d,
                                                     const RankRounding& rank) const {
  using Mat = Eigen::MatrixXd;
  // Through D (dD = -R dWᵀ G^-1 - D dW W⁺, Γ = d/dD tr(D M Dᵀ) = 2 D M, W⁺ᵀ = G^-1 W):
  //   -G^-1 Γᵀ R - Dᵀ Γ G^-1 W;  through G in M: 2 q ((Dᵀ D) ∘ Ω') W.
  const auto RqU = d.Rq.triangularView<Eigen::Upper>();
  const Mat Gamma = 2.0 * d.D * rank.M;
  StackGradient g;
  g.on_R = -RqU.solve(RqU.transpose().solve(Mat(Gamma.transpose())));  // -G^-1 Γᵀ
  g.on_W = Mat((g.on_R * d.D).transpose()) +  // -Dᵀ Γ G^-1 = (-G^-1 Γᵀ D)ᵀ
           2.0 * q_ * (d.D.transpose() * d.D).cwiseProduct(omega_);
  return g;
}

void RoundingModel::AddDirectGradient(int j, const ConstRowMap& X, const Decoding& d,
                                      double weight, double* grad_x) const {
  using Mat = Eigen::MatrixXd;
  const int N = N_, c = c_, L = L_;
  // Through a: tr(D diag(a) Dᵀ) = sum_r alpha_r a_r, alpha_r = ||D[:, r]||^2, and a_r is linear
  // in the squared entries of encoder rows. Encode part directly; ring part by the adjoint of
  // the chain R(i, t) = R(i-1, t-1) + hop(i, t) (with feedback, the weighted sums of hops
  // directly): lambda(i, t) = d/dhop(i, t), then mu(i, t) = d/dn2(i, t) through every hop that
  // sums n2(i, t).
  const Eigen::VectorXd alpha = weight * d.D.colwise().squaredNorm().transpose();
  Eigen::Map<RowMat> gx(grad_x, X.rows(), c);
  for (int i = 0; i < N; ++i) {
    if (i == j) continue;
    const int s = Mod(j - 1 - i, N);
    for (int r = 0; r < c; ++r) {
      const int row = encoder_rows_[i] + N - 2 + r - s;
      gx.row(row) += (2 * q_ * alpha(r)) * beta_.cwiseProduct(X.row(row));
    }
  }
  // The ring's error of row r also sits in rows r + mN (Rank): weight 2 (Dᵀ D)[r, r + mN] each.
  const Mat DtD = weight * (d.D.transpose() * d.D);
  Mat lambda = Mat::Zero(N, L);
  if (feedback_) {
    // Rank: row r's ring terms sum hop (j-1-s, t-s) with weight w^2 (variance) and w (slope),
    // w = 1 + floor((s + 1) / N), and row r + mN's covariance is var + m slope.
    for (int r = 0; r < c; ++r) {
      double on_var = alpha(r), on_slope = 0;
      for (int r2 = r + N, m = 1; r2 < c; r2 += N, ++m) {
        on_var += 2 * DtD(r, r2);
        on_slope += 2 * m * DtD(r, r2);
      }
      const int t = N - 2 + r;
      for (int s = 0; s <= t; ++s) {
        const double w = 1 + (s + 1) / N;
        lambda(Mod(j - 1 - s, N), t - s) += on_var * w * w + on_slope * w;
      }
    }
  } else {
    for (int r = 0; r < c; ++r) {
      double seed = alpha(r);
      for (int r2 = r + N; r2 < c; r2 += N) seed += 2 * DtD(r, r2);
      lambda(Mod(j - 1, N), N - 2 + r) = seed;
    }
    for (int t = L - 2; t >= 0; --t)
      for (int i = 0; i < N; ++i) lambda(i, t) += lambda(Mod(i + 1, N), t + 1);
  }
  Mat mu = Mat::Zero(N, L);
  for (int t = state64_ ? 0 : 1; t < L; ++t)
    for (int i = 0; i < N; ++i) {
      const double h = q_ * lambda(i, t);
      if (h == 0) continue;
      if (t >= N && !wide_) mu(i, t - N) += h;
      const double hx = h * (t >= N && !wide_ ? 2.0 : 1.0);
      for (int s = 0; s < N && s <= t; ++s) mu(Mod(i - s, N), t - s) += hx;
    }
  for (int i = 0; i < N; ++i)
    for (int t = 0; t < L; ++t)
      if (mu(i, t) != 0) gx.row(encoder_rows_[i] + t) += 2 * mu(i, t) * X.row(encoder_rows_[i] + t);
}

}  // namespace cerar::design::opt
