#pragma once
// The optimiser's inner loop: float64 figures of a least-squares-decoded design and their
// analytic gradients with respect to the design variables (docs/optimizer.md §2-§4).
//
// Variables x are a flat row-major array of c-wide rows. Shift-invariant: the rows of the base
// sequence C(tau), tau = -(N-1) .. L-1 (row index tau + N - 1). Per rank: E_0, ..., E_{N-1}
// stacked (row index i*L + t). Every window W_ij and every encoder E_i is then a block of
// contiguous rows, so one evaluator serves both parametrisations.
#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"
#include "design/optimizer_model.h"

namespace cerar::design::opt {

enum class Parametrisation { kShiftInvariant, kPerRank };

// One distinct window of rank j's decoding problem: rows [row, row + c) of x, appearing
// `multiplicity` times among the W_ij, i != j.
struct WindowRef {
  int row = 0;
  int multiplicity = 0;
};

class Evaluator {
 public:
  // `target`: the arithmetic of ErrorNorm::kPredicted (the error model's unit roundoff).
  Evaluator(int N, int c, Parametrisation parametrisation,
            Arithmetic target = Arithmetic::kFloat32);

  int N() const { return N_; }
  int c() const { return c_; }
  int L() const { return c_ + N_ - 2; }
  int rows() const { return rows_; }       // rows of x
  int size() const { return rows_ * c_; }  // number of variables

  // Which figure of each rank's error the objective uses.
  // kSchatten: log of the Schatten-32 norm of the error block row, a smooth upper bound on
  // err_op (at most 2^(1/32) - 1 = 2.2 % above it where the top singular value is double) that
  // the search uses for the op objective, since sigma_max is not differentiable at multiple
  // singular values (the cos/sin pairs make them common).
  // kPredicted: log of the error model's predicted_j for the target arithmetic
  // (docs/error-model.md): sqrt(err_rms_j^2 + rounding_j / (N c)), rounding amplified by D.
  enum class ErrorNorm { kFrobenius, kSpectral, kSchatten, kPredicted };
  static constexpr double kSchattenP = 32;

  // Per-rank logs of the figures (PROTOCOL.md §5) and, when requested, their gradients.
  struct Result {
    std::vector<double> log_err;        // N: log err_rms_j, log err_op_j or its Schatten bound
    std::vector<double> log_kappa_dec;  // N
    std::vector<double> log_kappa_enc;  // N
    // Gradients, filled only by Evaluate(..., true): 3N rows of size(), row j for log_err_j,
    // N + j for log_kappa_dec_j, 2N + j for log_kappa_enc_j (the search's constraint order).
    MatrixXd gradient;  // row-major
    auto grad_log_err(int j) const { return gradient.row(j).transpose(); }
    auto grad_log_kappa_dec(int j) const {
      return gradient.row(int(log_err.size()) + j).transpose();
    }
    auto grad_log_kappa_enc(int j) const {
      return gradient.row(2 * int(log_err.size()) + j).transpose();
    }
    // Ranks whose error is exactly zero by structure (one distinct window): their log_err is
    // rounding noise and its gradient is set to zero (kPredicted: their rounding remains, and
    // only the err_rms part of the gradient is zero).
    std::vector<bool> exact;
    bool singular = false;  // some window stack lost rank: figures are +huge
  };
  // kappas = false: skips kappa_dec and kappa_enc (log_kappa_* left 0, gradient rows N only),
  // for searches that bound no condition number.
  Result Evaluate(const double* x, ErrorNorm norm, bool with_gradient, bool kappas = true) const;

  // The same into storage the caller keeps across calls (the search's inner loop: at per rank
  // N = 16, c = 32 the 3N gradients are 9 MB, and allocating them afresh each call cost ~40 % of
  // an evaluation). `gradient` (may be null: no gradients) receives the 3N rows of size()
  // described in Result (N rows without kappas), row r at gradient + r * stride;
  // out.gradient is left untouched.
  void EvaluateInto(const double* x, ErrorNorm norm, Result& out, double* gradient,
                    Eigen::Index stride, bool kappas = true) const;

  // Full float64 figures of x (all four, per rank) for reporting.
  Figures Analyse(const double* x) const;

  // Encoders E_i (L x c) that x describes.
  std::vector<MatrixXd> Encoders(const double* x) const;

 private:
  int N_, c_, rows_;
  Parametrisation parametrisation_;
  std::vector<std::vector<WindowRef>> windows_;  // per decoding rank j
  std::vector<int> encoder_rows_;                // first row of E_i in x
  RoundingModel model_;                          // kPredicted
};

// Largest entry of per-rank figures (-inf for none).
inline double MaxOf(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double e : v) m = std::max(m, e);
  return m;
}

// Base sequence of the eps construction (PROTOCOL.md §6), rows tau = -(N-1) .. L-1, row-major
// (L + N - 1) x c, in the shift-invariant layout of Evaluator.
Eigen::VectorXd EpsBaseSequence(int N, int c, double eps);

// The same design in the per-rank layout: E_0 .. E_{N-1} stacked.
Eigen::VectorXd ShiftInvariantToPerRank(int N, int c, const Eigen::VectorXd& base);

// The eps construction in the layout of either parametrisation.
inline Eigen::VectorXd EpsPoint(int N, int c, double eps, bool per_rank) {
  const Eigen::VectorXd base = EpsBaseSequence(N, c, eps);
  return per_rank ? ShiftInvariantToPerRank(N, c, base) : base;
}

}  // namespace cerar::design::opt
