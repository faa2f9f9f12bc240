#pragma once
// Rescaled continuation (docs/optimizer.md §6): carries a design optimised for one kappa budget to
// a larger budget by re-scaling its departure from the eps construction, so the search for the
// larger budget starts in the basin the smaller budget found instead of at the eps point.
#include <Eigen/Core>
#include <string>

#include "design/optimizer_objective.h"

namespace cerar::design::opt {

struct Transfer {
  Eigen::VectorXd x;       // start point for the larger budget (meets it in float64)
  double log_err = 0;      // its max_j log err_j in the search's norm
  std::string how;         // "previous best" or "rescaled, exponents (e_0, e_1, ...)"
  double scale = 1;        // s: eps_to / eps_from of the candidate (1 for "previous best")
  int evaluations = 0;     // design evaluations spent
};

// x: the best point for the smaller budget, in ev's layout (shift-invariant or per rank),
// optimised from the eps construction at eps_from. Writes x = a (X_eps(eps_from) + Delta) (a: a
// least-squares gauge) and splits Delta, column cluster by column cluster (the columns k = qN + p
// of one p share a root of unity; lambda_q = q - r*/2), into moments Delta_k along orthonormal
// polynomials of degree k in lambda. Candidates X_eps(s eps_from) + sum_k s^{e_k} Delta_k for a
// few exponent patterns e (e_k = max(0, A - k), A = 1 .. r* + 2, and e_k = 1), each with s fitted
// by bisection in log s so that max(kappa_dec, kappa_enc) meets kappa_bound; and x itself, which
// meets every larger budget. Returns the candidate with the smallest error.
Transfer RescaleToBudget(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x,
                         double eps_from, double eps_to, double kappa_bound,
                         Evaluator::ErrorNorm norm);

// For a stage with no budget to fit (the predicted error prices kappa): the same candidates with
// s on a grid of quarter octaves below 1 (s = 2^-j/4), each pattern scanned while its
// max(kappa_dec, kappa_enc) stays within kappa_cap and until its error has risen three steps in a
// row, and x itself. Returns the candidate with the smallest error. Equivalent to fitting one
// budget per grid point, as kappa falls monotonically in s, at one evaluation per point instead
// of a bracket and a bisection (~23).
Transfer RescaleForError(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x,
                         double eps_from, double kappa_cap, Evaluator::ErrorNorm norm);

}  // namespace cerar::design::opt
