#pragma once
// The optimiser's float64 search (docs/optimizer.md §5-§6): epigraph formulation driven by NLopt,
// restarts, best-feasible tracking, evaluation and time budgets. No high-precision code here;
// Optimize() (optimizer.cc) re-analyses what this returns.
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "cerar/design/optimizer.h"
#include "design/optimizer_objective.h"

namespace cerar::design::opt {

struct SearchSettings {
  Evaluator::ErrorNorm norm = Evaluator::ErrorNorm::kFrobenius;
  double kappa_bound = 1e3;  // on kappa_dec_j and kappa_enc_i of the tracked best point
  double slack = 0;          // NLopt's constraints use kappa_bound (1 - slack)
  OptimizerAlgorithm algorithm = OptimizerAlgorithm::kMma;
  double time_limit_s = 60;
  int max_evaluations = 20000;
  double box = 1;          // |x_k| <= box: the normalisation of docs/optimizer.md §4
  std::uint64_t seed = 0;  // basin-hopping perturbations
  int max_hops = 1 << 30;
  double hop_scale = 1;  // multiplies the basin-hopping amplitudes (continuation stages)
  // L-BFGS vector storage (AUGLAG's inner optimiser); 0: NLopt's heuristic;
  // OptimizeOptions::kLbfgsMemoryAuto: EffectiveLbfgsMemory for the evaluator's size.
  int lbfgs_memory = 0;
  std::function<void(const OptimizeProgress&)> progress;
  double progress_interval_s = 1;
};

// The L-BFGS memory a search over `variables` unknowns uses for the requested setting
// (OptimizeOptions::lbfgs_memory; kLbfgsMemoryAuto resolves by the problem's size).
int EffectiveLbfgsMemory(int requested, int variables);

struct SearchResult {
  Eigen::VectorXd x;      // best point meeting the kappa bound (x0 if none did)
  bool feasible = false;  // some evaluated point met the kappa bound
  double objective = 0;   // its err (rms or op, float64)
  int evaluations = 0;
  int rounds = 0;          // NLopt runs
  int hops = 0;            // basin-hopping perturbations
  std::string stopped_by;  // "converged" | "max_hops" | "max_evaluations" | "time_limit"
  int stages = 1;          // kappa-continuation stages (RunFloat64)
  std::vector<std::string> stage_starts;  // how each stage after the first started
                                          // (RescaleToBudget's `how`)
  double elapsed_s = 0;
};

SearchResult Search(const Evaluator& evaluator, const Eigen::VectorXd& x0,
                    const SearchSettings& settings);

// Float64 part of Optimize: start point, perturbation, search, gauge normalisation.
struct Float64Run {
  double start_eps = 0;
  bool start_feasible = true;      // the eps start met the kappa budget
  Eigen::VectorXd start_x, x;      // in the evaluator's layout
  Figures start_figures, figures;  // float64
  SearchResult search;
  bool skipped = false;  // start already exact: nothing to optimise
};
Float64Run RunFloat64(const OptimizeOptions& options, const Evaluator& evaluator);

// continuation_from after resolving kContinuationAuto: 100 where c <= 2N (r* = 1), else 0 (off);
// for r* >= 2 the moment rescaling did not carry the gain (docs/optimizer.md §9).
double EffectiveContinuationFrom(const OptimizeOptions& options);

// Option checks shared by Optimize and the float64 run; throws InvalidArgument.
void ValidateOptions(const OptimizeOptions& options);

}  // namespace cerar::design::opt
