#pragma once
// Design optimiser (PROTOCOL.md §8, docs/optimizer.md).
//
// Searches encoders (the shift-invariant base sequence C(tau), or one E_i per rank) that
// minimise a figure of the least-squares-decoded design: err_rms or err_op subject to
// kappa_dec, kappa_enc <= kappa_max, or the predicted error of a run in a target arithmetic
// (docs/error-model.md), which chooses the conditioning and the encoders together. The inner
// loop is float64 with analytic gradients driven by NLopt (AUGLAG around LD_LBFGS by default,
// with basin hopping); the start point is an eps construction; the result is re-analysed in
// high precision and kept only if it beats the start point there.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"

namespace cerar::design {

// kRms, kOp: err_rms or err_op under the kappa bound. kPredicted: the error model's predicted
// error for OptimizeOptions::target (docs/error-model.md), the kappa bound optional.
enum class Objective { kRms, kOp, kPredicted };
Objective ParseObjective(const std::string& name);  // "rms" | "op" | "predicted"
std::string ToString(Objective objective);

// The design variables. kAuto resolves by (N, c): ResolveVariables.
enum class Variables { kAuto, kShiftInvariant, kPerRank };
Variables ParseVariables(const std::string& name);  // "auto" | "shift-invariant" | "per-rank"
std::string ToString(Variables variables);

// NLopt algorithm for the inner loop (docs/optimizer.md says why AUGLAG + LBFGS is the default).
enum class OptimizerAlgorithm { kMma, kCcsaq, kSlsqp, kAuglagLbfgs };
// "mma" | "ccsaq" | "slsqp" | "auglag-lbfgs"
OptimizerAlgorithm ParseOptimizerAlgorithm(const std::string& name);
std::string ToString(OptimizerAlgorithm algorithm);

// Reported to OptimizeOptions::progress, at most once per progress_interval_s.
struct OptimizeProgress {
  int evaluations = 0;          // design evaluations so far (one per optimiser step/probe)
  double objective = 0;         // best figure so far (err_rms, err_op or predicted; float64)
  double worst_constraint = 0;  // max(kappa_dec, kappa_enc) / kappa bound at the latest probe
                                // (0 when no kappa is bounded)
  double elapsed_s = 0;
};

struct OptimizeOptions {
  int N = 8;
  int c = 16;
  // Bound on kappa_dec and kappa_enc (>= 1). kRms and kOp need a finite one; kPredicted takes
  // kNoKappaBound (the default), and then the error model alone prices the conditioning.
  static constexpr double kNoKappaBound = std::numeric_limits<double>::infinity();
  // The largest finite bound the float64 search resolves: it takes sigma_min from a Gram matrix,
  // accurate to u kappa^2 (1 % at 1e7), so above it the search and its start scan see rounding
  // (kappa_max 1e10 gave twice the err_rms of the eps design inside that budget).
  static constexpr double kMaxSearchKappa = 1e7;
  double kappa_max = kNoKappaBound;
  Objective objective = Objective::kRms;
  Arithmetic target = Arithmetic::kFloat32;  // of kPredicted
  // kAuto (the default): per rank where N (c + N - 2) c <= kPerRankMaxVariables, else
  // shift-invariant (docs/optimizer.md §1 gives the measurements behind the rule).
  Variables variables = Variables::kAuto;
  static constexpr int kPerRankMaxVariables = 60000;
  OptimizerAlgorithm algorithm = OptimizerAlgorithm::kAuglagLbfgs;
  double time_limit_s = 60;      // wall-clock guard (> 0); a run cut by it is not reproducible
  int max_evaluations = 200000;  // the reproducible stop (>= 1)
  int max_hops = 1 << 30;        // basin-hopping restarts after the first local search (>= 0)
  std::uint64_t seed = 0;        // seeds the hops; != 0 also perturbs the start point
  double perturbation = 1e-2;    // relative size of the seeded perturbation of the start
  // Rescaled continuation in kappa (docs/optimizer.md §6): first solve for the budgets
  // kappa_max / continuation_factor^s >= continuation_from (smallest first), each stage starting
  // from the previous stage's design rescaled to its budget (RescaleToBudget), then kappa_max.
  // kPredicted: the stages run on err_rms up to the last budget below the start's kappa, then
  // the predicted error takes over. 0: off. kContinuationAuto (the default): 100 where c <= 2N
  // (one node beside each root of unity, where the rescaling carries the gain), else off.
  static constexpr double kContinuationAuto = -1;
  double continuation_from = kContinuationAuto;
  double continuation_factor = 10;  // ratio of consecutive continuation budgets (> 1)
  // The search's own bound is kappa_max (1 - search_slack) while the best point is tracked
  // against kappa_max: NLopt's iterates hover just outside the bound they see, so without the
  // slack a better point only counts when one lands inside (docs/optimizer.md §6). In [0, 0.5].
  double search_slack = 0.02;
  // Correction pairs kept by AUGLAG's inner L-BFGS (NLopt's vector storage; >= 0, 0 for
  // NLopt's own heuristic). kLbfgsMemoryAuto (the default): min(100, max(10, 600000 / n)) for
  // n variables (docs/optimizer.md §6).
  static constexpr int kLbfgsMemoryAuto = -1;
  int lbfgs_memory = kLbfgsMemoryAuto;
  // Final analysis precision: float64 or mp50 (mp50 unless a test wants speed).
  Precision precision = Precision::kMp50;
  // Highest working precision of that analysis's ladder (mp50), in significant digits, as
  // `cerar design --max-digits`: 50 ... 10000; 50 runs one rung and leaves the figures
  // uncertified (each rung costs ~30 s at N = 16, c = 48 per rank: docs/optimizer.md §8b).
  int max_digits = kDefaultMaxDigits;
  std::function<void(const OptimizeProgress&)> progress;  // optional
  double progress_interval_s = 1.0;

  // Ceres-style check of every rule above: "" when the options are valid, else one message
  // naming the option, its value and the rule ("kappa_max = 0.5, expected ...").
  std::string Validate() const;
};

// The variables `options.variables` stands for at (N, c).
Variables ResolveVariables(const OptimizeOptions& options);

// Process-wide allocator setting for programs that run the optimiser (the cerar CLI calls it
// first thing; the library never does, as it is global state). An evaluation at per rank
// N = 16, c = 32 allocates and frees ~2 MB of temporaries per rank; with glibc's default
// (dynamic) trim and mmap thresholds that memory can go back to the kernel and be faulted in
// again every time, depending on the process's allocation history (docs/optimizer.md §6). Raises
// both thresholds (mmap 16 MiB, trim 64 MiB). Returns false where the C library is not glibc.
bool KeepAllocatorMemory();

// An optimisation that found a design, or the reason none meets the budget (a value, not an
// exception: ParetoFront records it per point).
struct OptimizeResult {
  std::optional<Design> design;
  std::string infeasible;  // why there is no design, when design is empty
};

// Throws InvalidArgument with options.Validate()'s message for invalid options. The design's
// provenance (construction "optimized") records everything needed to rerun it: objective,
// target, variables, budgets, seed, the optimiser, its stop reason, the start point and its
// figures, the float64 and high-precision figures of the result, and "improved": false (plus a
// note) when the start point was kept.
OptimizeResult TryOptimize(const OptimizeOptions& options);
// TryOptimize, throwing NumericalError with the reason when no design meets the budget.
Design Optimize(const OptimizeOptions& options);

// The eps construction at the eps with the smallest err_rms among those meeting the kappa
// budget: kappa_dec <= kappa_max, and kappa_enc <= kappa_max too when bound_kappa_enc. Found by
// a log-spaced scan and bisection on the float64 figures; `figures` are float64. When no eps
// meets the budget, `feasible` is false and eps, figures are those of the smallest
// max(kappa_dec, kappa_enc) the scan met. Throws InvalidArgument only for N < 2, c < 1, or
// kappa_max < 1 or not finite.
struct EpsAtKappa {
  bool feasible = false;
  double eps = 0;
  Figures figures;
  std::string Describe(int N, int c, double kappa_max, bool bound_kappa_enc) const;  // why not
};
EpsAtKappa BestEpsWithinKappa(int N, int c, double kappa_max, bool bound_kappa_enc);

// The eps construction at the eps with the smallest predicted error in `target` (the start of
// a kPredicted search; the same model as TuneEps, evaluated in float64 on the shift-invariant
// layout), among those meeting kappa_max (kNoKappaBound: all). feasible as above.
EpsAtKappa BestEpsForTarget(int N, int c, Arithmetic target, double kappa_max);

// Error-vs-kappa fronts: for each of `points` log-spaced kappa budgets in [kappa_from,
// kappa_to], the best eps construction with kappa_dec <= kappa (figures in `precision`) and,
// when `optimize`, the optimised design for that budget.
struct ParetoOptions {
  int N = 8;
  int c = 16;
  double kappa_from = 1e1, kappa_to = 1e6;
  int points = 6;  // >= 1; 1 needs kappa_from == kappa_to
  bool optimize = true;
  Objective objective = Objective::kRms;  // rms | op
  Variables variables = Variables::kAuto;
  double continuation_from = OptimizeOptions::kContinuationAuto;
  double time_limit_s = 60;      // per point
  int max_evaluations = 200000;  // per point
  std::uint64_t seed = 0;
  Precision precision = Precision::kMp50;
  int max_digits = kDefaultMaxDigits;  // as OptimizeOptions::max_digits
  std::function<void(const OptimizeProgress&)> progress;  // optional, per point

  std::string Validate() const;  // as OptimizeOptions::Validate
};
struct ParetoPoint {
  double kappa = 0;            // the budget
  bool has_eps = false;        // false when no eps meets kappa_dec <= kappa
  double eps = 0;              // eps of the eps point
  Figures eps_figures;         // eps construction, kappa_dec <= kappa
  bool has_optimized = false;  // false when !optimize or no design meets the budget
  Figures optimized_figures;   // optimised design (== start figures when not improved)
  bool improved = false;
  std::string infeasible;  // why there is no optimised design, when optimize and none
  double seconds = 0;      // optimiser wall time
};
// Throws InvalidArgument with options.Validate()'s message for invalid options.
std::vector<ParetoPoint> ParetoFront(const ParetoOptions& options);

}  // namespace cerar::design
