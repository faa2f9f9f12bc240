// Float64 figures and analytic gradients for the optimiser (docs/optimizer.md §2-§4).
#include "design/optimizer_objective.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "design/parallel.h"

namespace cerar::design::opt {
namespace {

using Mat = Eigen::MatrixXd;
using RowMap = Eigen::Map<RowMat>;

// Returned for a singular window stack: large but finite, so NLopt backs off instead of failing.
constexpr double kHugeLog = 700.0;

// Adds the gradient with respect to the stacked, scaled windows (c x K c) to the gradient
// row `grad` (size() entries) with respect to x: block k of the stack is sqrt(m_k) times rows
// [row_k, row_k + c) of x.
void ScatterWindowGradient(const Mat& g_stack, const std::vector<WindowRef>& refs, int rows,
                           int c, double* grad) {
  RowMap gx(grad, rows, c);
  int k = 0;
  for (const WindowRef& w : refs) {
    if (w.multiplicity == 0) continue;
    gx.block(w.row, 0, c, c) += std::sqrt(double(w.multiplicity)) * g_stack.middleCols(k * c, c);
    ++k;
  }
}

// Largest and smallest singular triplets of A through the symmetric eigenproblem of the smaller
// Gram matrix: ~15x faster than a Jacobi SVD at c = 32; sigma_min^2 is accurate to ~u kappa^2
// relative (1e-8 at kappa = 1e4), ample for the search (the result is re-checked in mp50).
struct Extremes {
  double smax = 0, smin = 0;
  Eigen::VectorXd umax, vmax, umin, vmin;
};
Extremes ExtremeSingular(const Mat& A) {
  Extremes e;
  const bool tall = A.rows() >= A.cols();
  const Mat G = tall ? Mat(A.transpose() * A) : Mat(A * A.transpose());
  Eigen::SelfAdjointEigenSolver<Mat> eig(G);
  const Eigen::VectorXd& lam = eig.eigenvalues();  // ascending
  const int k = int(lam.size()) - 1;
  e.smax = std::sqrt(std::max(lam(k), 0.0));
  e.smin = std::sqrt(std::max(lam(0), 0.0));
  const Eigen::VectorXd top = eig.eigenvectors().col(k), bottom = eig.eigenvectors().col(0);
  if (tall) {
    e.vmax = top;
    e.vmin = bottom;
    e.umax = A * top / e.smax;
    e.umin = e.smin > 0 ? Eigen::VectorXd(A * bottom / e.smin) : Eigen::VectorXd::Zero(A.rows());
  } else {
    e.umax = top;
    e.umin = bottom;
    e.vmax = A.transpose() * top / e.smax;
    e.vmin = e.smin > 0 ? Eigen::VectorXd(A.transpose() * bottom / e.smin)
                        : Eigen::VectorXd::Zero(A.cols());
  }
  return e;
}

// First row of E_i in x: shift-invariant E_i[t] = C(t - i) at row t - i + N - 1; per rank E_i
// at i L.
std::vector<int> EncoderRows(int N, int c, Parametrisation parametrisation) {
  std::vector<int> rows(std::max(N, 0));
  for (int i = 0; i < N; ++i)
    rows[i] = parametrisation == Parametrisation::kShiftInvariant ? N - 1 - i : i * (c + N - 2);
  return rows;
}

}  // namespace

Evaluator::Evaluator(int N, int c, Parametrisation parametrisation, Arithmetic target)
    : N_(N),
      c_(c),
      parametrisation_(parametrisation),
      encoder_rows_(EncoderRows(N, c, parametrisation)),
      model_(N, c, encoder_rows_, target) {
  if (N < 2) throw InvalidArgument("optimizer: N = " + std::to_string(N) + ", expected N >= 2");
  if (c < 1) throw InvalidArgument("optimizer: c = " + std::to_string(c) + ", expected c >= 1");
  const int L = c + N - 2;
  windows_.resize(N);
  if (parametrisation == Parametrisation::kShiftInvariant) {
    // PROTOCOL.md §6: C rows tau = -(N-1) .. L-1 at row index tau + N - 1. For rank j the
    // windows of ranks i < j start at tau = N-1-j, those of ranks i > j at tau = -1-j.
    rows_ = L + N - 1;
    for (int j = 0; j < N; ++j) {
      windows_[j] = {WindowRef{2 * N - 2 - j, j}, WindowRef{N - 2 - j, N - 1 - j}};
    }
  } else {
    rows_ = N * L;
    for (int j = 0; j < N; ++j) {
      for (int i = 0; i < N; ++i) {
        if (i == j) continue;
        windows_[j].push_back(WindowRef{i * L + N - 2 - HopOffset(i, j, N), 1});
      }
    }
  }
}

Evaluator::Result Evaluator::Evaluate(const double* x, ErrorNorm norm, bool with_gradient,
                                      bool kappas) const {
  Result out;
  if (with_gradient) out.gradient.resize((kappas ? 3 : 1) * N_, size());
  EvaluateInto(x, norm, out, with_gradient ? out.gradient.data() : nullptr, size(), kappas);
  return out;
}

void Evaluator::EvaluateInto(const double* x, ErrorNorm norm, Result& out, double* gradient,
                             Eigen::Index stride, bool kappas) const {
  const int N = N_, c = c_, L = c_ + N_ - 2;
  ConstRowMap X(x, rows_, c);
  out.log_err.assign(N, 0.0);
  out.log_kappa_dec.assign(N, 0.0);
  out.log_kappa_enc.assign(N, 0.0);
  out.exact.assign(N, false);
  const bool with_gradient = gradient != nullptr;
  // Gradient row r, zeroed by the rank that owns it (so the zeroing runs in parallel too).
  auto row = [&](int r) {
    double* g = gradient + r * stride;
    std::fill(g, g + size(), 0.0);
    return g;
  };

  // Ranks are independent: each writes only its own slots, so the result does not depend on the
  // thread count. Threads pay off once the ranks' problems are large (per-rank N = 16, c = 32);
  // small problems stay serial, where starting threads would cost more than it saves.
  std::vector<char> singular(2 * N, 0);  // windows of rank j, encoder of rank i
  const bool model = norm == ErrorNorm::kPredicted;
  const RoundingModel::Ring ring = model ? model_.Prepare(X) : RoundingModel::Ring{};
  const bool threaded = double(N) * windows_[0].size() * c * c * c > 2e6;
  auto each_rank = [&](const auto& body) {
    if (threaded)
      detail::ParallelFor(N, body);
    else
      for (int j = 0; j < N; ++j) body(j);
  };
  each_rank([&](int j) {
    // Stack the distinct windows, scaled by sqrt(multiplicity): same LS decoder, same Frobenius
    // and spectral norms of the error block row as the full (N-1)-block problem.
    const auto& refs = windows_[j];
    double* grad_err = with_gradient ? row(j) : nullptr;
    double* grad_dec = with_gradient && kappas ? row(N + j) : nullptr;
    int K = 0;
    for (const WindowRef& w : refs) K += w.multiplicity > 0;
    out.exact[j] = K == 1;
    Mat W(c, K * c);
    std::vector<double> scale;  // sqrt(m_k): T = [scale_1 I, ..., scale_K I]
    int k = 0;
    for (const WindowRef& w : refs) {
      if (w.multiplicity == 0) continue;
      scale.push_back(std::sqrt(double(w.multiplicity)));
      W.middleCols(k * c, c) = scale.back() * X.block(w.row, 0, c, c);
      ++k;
    }
    // T A for A with K c rows: a weighted sum of A's c-row blocks (T is identity blocks; a dense
    // product would cost K c^3 multiply-adds for nothing).
    auto times_T = [&](const Mat& A) {
      Mat sum = scale[0] * A.topRows(c);
      for (int b = 1; b < K; ++b) sum += scale[b] * A.middleRows(b * c, c);
      return sum;
    };
    // LS decoder through a Householder QR of W^T = Q Rq (backward stable: accuracy ~ u kappa(W),
    // not u kappa(W)^2 as with the normal equations; 10x cheaper than an SVD at c = 32).
    // W^+ = Q Rq^-T, D = T W^+, D W - T = T Q Q^T - T, G^-1 = (W W^T)^-1 = Rq^-1 Rq^-T.
    const Eigen::HouseholderQR<Mat> qr(W.transpose());
    const Mat Q = qr.householderQ() * Mat::Identity(K * c, c);
    const Mat Rq = qr.matrixQR().topRows(c).triangularView<Eigen::Upper>();
    const Eigen::VectorXd rdiag = Rq.diagonal().cwiseAbs();
    if (!(rdiag.minCoeff() > 1e-14 * rdiag.maxCoeff()) || !std::isfinite(rdiag.maxCoeff())) {
      singular[j] = 1;
      out.log_err[j] = out.log_kappa_dec[j] = kHugeLog;
      return;
    }
    const auto RqU = Rq.triangularView<Eigen::Upper>();
    const Mat Wpinv = Mat(RqU.solve(Mat(Q.transpose()))).transpose();  // K c x c
    const Mat D = times_T(Wpinv);                                      // c x c
    Mat R = times_T(Q) * Q.transpose();                                // D W - T, c x K c
    for (int b = 0; b < K; ++b) R.middleCols(b * c, c).diagonal().array() -= scale[b];

    Mat g_stack;  // gradient w.r.t. the stack, reused per figure
    if (model) {
      // predicted_j^2 = err_rms_j^2 + rounding_j / (N c) (optimizer_model.h). With one distinct
      // window (K = 1) the design is exact and R is noise: only rounding counts.
      const RoundingModel::Decoding dec{W, D, Wpinv, R, Rq};
      const RoundingModel::RankRounding rounding = model_.Rank(j, ring, dec);
      const double Nc = double(N) * c;
      const double P = ((K == 1 ? 0.0 : R.squaredNorm()) + rounding.value) / Nc;
      out.log_err[j] = 0.5 * std::log(P);
      if (with_gradient) {
        // d (P N c) / dW = 2 Dᵀ R (err_rms part, envelope theorem) + the rounding part.
        const double w = 1 / (2 * P * Nc);  // d log sqrt(P) / d (P N c)
        RoundingModel::StackGradient g = model_.Gradient(dec, rounding);
        if (K > 1) g.on_R += 2 * D.transpose();
        g_stack = w * (g.on_R * R + g.on_W * W);
        ScatterWindowGradient(g_stack, refs, rows_, c, grad_err);
        model_.AddDirectGradient(j, X, dec, w, grad_err);
      }
    } else if (K == 1) {
      // One distinct window (N = 2, or ranks 0 and N-1 of a shift-invariant design): D = W^-1
      // is exact; the residual is rounding noise, whose "gradient" would only mislead.
      out.log_err[j] = std::log(std::max(
          norm == ErrorNorm::kFrobenius ? R.norm() / std::sqrt(double(N) * c) : R.norm(), 1e-300));
    } else if (norm == ErrorNorm::kFrobenius) {
      // err_rms_j^2 = ||R||_F^2 / (N c); envelope theorem: d||R||^2/dW = 2 D^T R.
      const double F = R.squaredNorm() + 1e-300;
      out.log_err[j] = 0.5 * std::log(F / (double(N) * c));
      if (with_gradient) {
        g_stack = D.transpose() * R / F;
        ScatterWindowGradient(g_stack, refs, rows_, c, grad_err);
      }
    } else if (norm == ErrorNorm::kSchatten) {
      // log ||R||_Sp = (1/p) log tr((R R^T)^(p/2)); gradient (R R^T)^(p/2-1) R / tr(...) w.r.t.
      // R, and D^T times that w.r.t. W (the terms through D vanish as for the Frobenius norm).
      Eigen::SelfAdjointEigenSolver<Mat> eig(R * R.transpose());
      const Eigen::VectorXd lam = eig.eigenvalues().cwiseMax(0.0);
      const double lmax = lam.maxCoeff() + 1e-300, p = kSchattenP;
      const Eigen::VectorXd ratio = lam / lmax;
      const double phi = ratio.array().pow(p / 2).sum();
      out.log_err[j] = 0.5 * std::log(lmax) + std::log(phi) / p;
      if (with_gradient) {
        const Mat& Ue = eig.eigenvectors();
        const Mat gR = Ue * ratio.array().pow(p / 2 - 1).matrix().asDiagonal() * Ue.transpose() *
                       R / (lmax * phi);
        g_stack = D.transpose() * gR;
        ScatterWindowGradient(g_stack, refs, rows_, c, grad_err);
      }
    } else {
      // err_op_j = sigma_max(R); d sigma = u^T D dW v because W v = 0 (v in the null space).
      const Extremes ex = ExtremeSingular(R);
      const double sigma = ex.smax + 1e-300;
      out.log_err[j] = std::log(sigma);
      if (with_gradient) {
        g_stack = (D.transpose() * ex.umax) * ex.vmax.transpose() / sigma;
        ScatterWindowGradient(g_stack, refs, rows_, c, grad_err);
      }
    }

    // kappa_dec_j = sigma_max(D) / sigma_min(D); dD = -R dW^T G^-1 - D dW W^+, G = W W^T.
    if (!kappas) return;
    const Extremes dx = ExtremeSingular(D);
    out.log_kappa_dec[j] = std::log(dx.smax) - std::log(dx.smin);
    if (with_gradient) {
      auto grad_sigma = [&](const Eigen::VectorXd& u, const Eigen::VectorXd& v) {
        const Eigen::VectorXd Ginv_v = RqU.solve(RqU.transpose().solve(v));
        return Mat(-Ginv_v * (R.transpose() * u).transpose() -
                   (D.transpose() * u) * (Wpinv * v).transpose());
      };
      g_stack = c == 1 ? Mat::Zero(c, K * c)  // kappa = 1 identically
                       : Mat(grad_sigma(dx.umax, dx.vmax) / dx.smax -
                             grad_sigma(dx.umin, dx.vmin) / dx.smin);
      ScatterWindowGradient(g_stack, refs, rows_, c, grad_dec);
    }
  });

  // kappa_enc_i = sigma_max(E_i) / sigma_min(E_i); d sigma = u^T dE v.
  if (kappas) each_rank([&](int i) {
    double* grad_enc = with_gradient ? row(2 * N + i) : nullptr;
    const Mat E = X.block(encoder_rows_[i], 0, L, c);
    const Extremes ex = ExtremeSingular(E);
    if (!(ex.smin > 0)) {
      singular[N + i] = 1;
      out.log_kappa_enc[i] = kHugeLog;
      return;
    }
    out.log_kappa_enc[i] = std::log(ex.smax) - std::log(ex.smin);
    if (with_gradient && c > 1) {
      const Mat g =
          ex.umax * ex.vmax.transpose() / ex.smax - ex.umin * ex.vmin.transpose() / ex.smin;
      RowMap gx(grad_enc, rows_, c);
      gx.block(encoder_rows_[i], 0, L, c) += g;
    }
  });
  out.singular = std::find(singular.begin(), singular.end(), 1) != singular.end();
}

Figures Evaluator::Analyse(const double* x) const {
  const Result rms = Evaluate(x, ErrorNorm::kFrobenius, false);
  const Result op = Evaluate(x, ErrorNorm::kSpectral, false);
  Figures f;
  f.precision = "float64";
  for (int j = 0; j < N_; ++j) {
    f.err_rms_per_rank.push_back(std::exp(rms.log_err[j]));
    f.err_op_per_rank.push_back(std::exp(op.log_err[j]));
    f.kappa_dec_per_rank.push_back(std::exp(rms.log_kappa_dec[j]));
    f.kappa_enc_per_rank.push_back(std::exp(rms.log_kappa_enc[j]));
  }
  f.err_rms = MaxOf(f.err_rms_per_rank);
  f.err_op = MaxOf(f.err_op_per_rank);
  f.kappa_dec = MaxOf(f.kappa_dec_per_rank);
  f.kappa_enc = MaxOf(f.kappa_enc_per_rank);
  return f;
}

std::vector<MatrixXd> Evaluator::Encoders(const double* x) const {
  ConstRowMap X(x, rows_, c_);
  std::vector<MatrixXd> E;
  for (int i = 0; i < N_; ++i) E.push_back(X.block(encoder_rows_[i], 0, L(), c_));
  return E;
}

// The toolkit's eps construction (engine_impl.h, its one implementation), row-major: the
// shift-invariant layout of Evaluator.
Eigen::VectorXd EpsBaseSequence(int N, int c, double eps) {
  const MatrixXd C = BaseSequence(Construction::kEps, N, c, eps);
  return Eigen::Map<const Eigen::VectorXd>(C.data(), C.size());
}

Eigen::VectorXd ShiftInvariantToPerRank(int N, int c, const Eigen::VectorXd& base) {
  const int L = c + N - 2;
  Eigen::VectorXd x(N * L * c);
  for (int i = 0; i < N; ++i)
    for (int t = 0; t < L; ++t)
      x.segment((i * L + t) * c, c) = base.segment((t - i + N - 1) * c, c);
  return x;
}

}  // namespace cerar::design::opt
