#pragma once
// The finite-precision error model of docs/error-model.md as an optimiser objective: for rank j,
// predicted_j^2 = err_rms_j^2 + rounding_j / (N c), with rounding_j in matrix form so that it
// and its gradient cost O(K c^3 + N^2 L) per rank (docs/optimizer.md §3b):
//
//   rounding_j = tr(D M Dᵀ) + q c,   M = diag(a) + q (G ∘ Ω'),   G = W Wᵀ,   q = 0.18 u²,
//
// a_r: the error variance reaching observation row r from encoding and the ring (before D);
// Ω': the weights of the decode's entry, product and partial-sum roundings (a constant matrix).
// detail::ModelError (error_model.cc) computes the same figure term by term; the tests hold the
// two equal and the gradient to finite differences.
#include <Eigen/Core>
#include <vector>

#include "cerar/design/toolkit.h"

namespace cerar::design::opt {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMat>;

class RoundingModel {
 public:
  // encoder_rows[i]: first row of E_i among the rows of x (the Evaluator's layout).
  RoundingModel(int N, int c, std::vector<int> encoder_rows, Arithmetic arithmetic);

  // Per evaluation, shared by all ranks: row norms, encode errors, and the ring's chain of
  // rounding errors. X: the rows of x.
  struct Ring {
    Eigen::MatrixXd n2;    // N x L: ||E_i[t, :]||^2 = Var e_i(t)
    Eigen::MatrixXd venc;  // N x L: error variance of computing e_i(t)
    Eigen::MatrixXd R;     // N x L: error variance of x_i(t) = y_{i+1}(t) without feedback
    Eigen::MatrixXd hop;   // N x L: the rounding variance rank i adds to x_i(t)
  };
  Ring Prepare(const ConstRowMap& X) const;

  // Inputs of rank j's decoding problem: the sqrt(m)-scaled window stack W (c x K c), its
  // least-squares decoder D = T W⁺, W⁺ (K c x c), the residual R = D W - T, and Rq with
  // G = W Wᵀ = Rqᵀ Rq (upper triangular, from the QR of Wᵀ).
  struct Decoding {
    const Eigen::MatrixXd& W;
    const Eigen::MatrixXd& D;
    const Eigen::MatrixXd& Wpinv;
    const Eigen::MatrixXd& R;
    const Eigen::MatrixXd& Rq;
  };

  // rounding_j and what its gradient needs (a, M).
  struct RankRounding {
    double value = 0;
    Eigen::VectorXd a;  // c: error variance of observation row r before the decode
    Eigen::MatrixXd M;  // c x c: diag(a) + q (G ∘ Ω')
  };
  RankRounding Rank(int j, const Ring& ring, const Decoding& d) const;

  // d rounding_j / dW (c x K c, with respect to the stack) through D and G, as on_R R + on_W W:
  // two c x c matrices, so that the caller adds its own terms before the K c^3 products.
  struct StackGradient {
    Eigen::MatrixXd on_R, on_W;
  };
  StackGradient Gradient(const Decoding& d, const RankRounding& rank) const;

  // Adds weight * d rounding_j / dx through a (the squared entries of the encoder rows every
  // observation of rank j holds, not only its windows) to grad_x (rows x c, row-major, the
  // layout of X).
  void AddDirectGradient(int j, const ConstRowMap& X, const Decoding& d, double weight,
                         double* grad_x) const;

  double q() const { return q_; }

 private:
  int N_, c_, L_;
  std::vector<int> encoder_rows_;
  double q_;              // 0.18 u^2
  bool wide_ = false;     // float32+acc64: each stored result rounded once
  bool feedback_ = false;  // float32+acc64+feedback: and the packets' rounding fed back
  bool state64_ = false;   // float32+state64: only packets and the result rounded
  Eigen::RowVectorXd beta_;  // encode: venc(i, t) = q sum_k beta_k E_i[t, k]^2
  Eigen::MatrixXd omega_;    // Ω' (c x c)
};

}  // namespace cerar::design::opt
