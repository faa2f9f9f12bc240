#pragma once
// The optimiser's float64 part (docs/optimizer.md §5-§6): one search (epigraph formulation
// driven by NLopt, restarts, basin hopping, best-point tracking, budgets) and the driver that
// chains searches into a run (start point, stages, warm start, gauge). No high-precision code
// here; TryOptimize (optimizer.cc) re-analyses what RunFloat64 returns.
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cerar/design/optimizer.h"
#include "design/optimizer_objective.h"

namespace cerar::design::opt {

struct SearchSettings {
  Evaluator::ErrorNorm norm = Evaluator::ErrorNorm::kFrobenius;
  // Bound on kappa_dec_j and kappa_enc_i of the tracked best point; infinite: no kappa
  // constraints at all (N constraints instead of 3N).
  double kappa_bound = 1e3;
  double slack = 0;  // NLopt's constraints use kappa_bound (1 - slack)
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

  bool bounds_kappa() const { return std::isfinite(kappa_bound); }
};

// The L-BFGS memory a search over `variables` unknowns uses for the requested setting
// (OptimizeOptions::lbfgs_memory; kLbfgsMemoryAuto resolves by the problem's size).
int EffectiveLbfgsMemory(int requested, int variables);

struct SearchResult {
  Eigen::VectorXd x;      // best point meeting the kappa bound (x0 if none did)
  bool feasible = false;  // some evaluated point met the kappa bound
  double objective = 0;   // its figure (err_rms, err_op or predicted; float64)
  int evaluations = 0;
  int rounds = 0;          // NLopt runs
  int hops = 0;            // basin-hopping perturbations
  std::string stopped_by;  // "converged" | "max_hops" | "max_evaluations" | "time_limit"
  double elapsed_s = 0;

  void Add(const SearchResult& later);  // counts and time of a later search of the same run
};

SearchResult Search(const Evaluator& evaluator, const Eigen::VectorXd& x0,
                    const SearchSettings& settings);

// Float64 part of TryOptimize.
struct Float64Run {
  double start_eps = 0;
  bool start_feasible = true;      // the eps start met the kappa budget
  Eigen::VectorXd start_x, x;      // in the evaluator's layout
  Figures start_figures, figures;  // float64
  SearchResult search;             // totals over all stages; x, objective of the last
  int stages = 1;                  // kappa-continuation stages (+1 for kPredicted's last)
  std::vector<std::string> stage_starts;  // how each stage after the first started
  // The arithmetic of the stages run before the target's (float32 for float32+acc64), if any.
  std::optional<Arithmetic> precursor;
  double precursor_share = 0;  // of the budgets, to the precursor's stages (0: no precursor)
  bool skipped = false;                   // start already exact: nothing to optimise
};
// The evaluator's layout follows ResolveVariables(options); its target is options.target.
Float64Run RunFloat64(const OptimizeOptions& options, const Evaluator& evaluator);

// continuation_from after resolving kContinuationAuto: 100 where c <= 2N (r* = 1), else 0 (off);
// for r* >= 2 the moment rescaling did not carry the gain (docs/optimizer.md §9).
double EffectiveContinuationFrom(const OptimizeOptions& options);

// The options of one point of a front (optimizer_options.cc; ParetoOptions::Validate checks
// them through OptimizeOptions::Validate, so the rules live in one place).
OptimizeOptions PointOptions(const ParetoOptions& options, double kappa);

}  // namespace cerar::design::opt
