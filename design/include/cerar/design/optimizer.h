#pragma once
// Condition-number-constrained design optimiser (PROTOCOL.md §8, docs/optimizer.md).
//
// Searches encoders (the shift-invariant base sequence C(tau), or one E_i per rank) that
// minimise err_rms or err_op of the least-squares-decoded design subject to
// kappa_dec <= kappa_max and kappa_enc <= kappa_max. The inner loop is float64 with analytic
// gradients driven by NLopt (AUGLAG around LD_LBFGS by default, with basin hopping); the start
// point is the eps construction at the eps whose condition numbers meet the budget; the result is
// re-analysed in high precision and kept only if it beats the start point there.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"

namespace cerar::design {

enum class Objective { kRms, kOp };
Objective ParseObjective(const std::string& name);  // "rms" | "op"
std::string ToString(Objective objective);

// NLopt algorithm for the inner loop (docs/optimizer.md says why AUGLAG + LBFGS is the default).
enum class OptimizerAlgorithm { kMma, kCcsaq, kSlsqp, kAuglagLbfgs };
// "mma" | "ccsaq" | "slsqp" | "auglag-lbfgs"
OptimizerAlgorithm ParseOptimizerAlgorithm(const std::string& name);
std::string ToString(OptimizerAlgorithm algorithm);

// Reported to OptimizeOptions::progress, at most once per progress_interval_s.
struct OptimizeProgress {
  int evaluations = 0;          // design evaluations so far (one per optimiser step/probe)
  double objective = 0;         // best feasible figure so far (err_rms or err_op, float64)
  double worst_constraint = 0;  // max(kappa_dec, kappa_enc) / kappa_max at the latest probe
  double elapsed_s = 0;
};

struct OptimizeOptions {
  int N = 8;
  int c = 16;
  double kappa_max = 1e3;  // bound on kappa_dec and kappa_enc, >= 1 (must admit the eps start)
  Objective objective = Objective::kRms;
  bool per_rank_encoders = false;  // false: shift-invariant C(tau); true: one E_i per rank
  OptimizerAlgorithm algorithm = OptimizerAlgorithm::kAuglagLbfgs;
  double time_limit_s = 60;      // wall-clock guard (> 0); a run cut by it is not reproducible
  int max_evaluations = 200000;  // the reproducible stop (>= 1)
  int max_hops = 1 << 30;        // basin-hopping restarts after the first local search (>= 0)
  std::uint64_t seed = 0;        // seeds the hops; != 0 also perturbs the start point
  double perturbation = 1e-2;    // relative size of the seeded perturbation of the start
  // Rescaled continuation in kappa (docs/optimizer.md §6): first solve for the budgets
  // kappa_max / continuation_factor^s >= continuation_from (smallest first), each stage starting
  // from the previous stage's design rescaled to its budget (RescaleToBudget), then kappa_max.
  // 0: off. kContinuationAuto (the default): 100 where c <= 2N (one node beside each root of
  // unity, where the rescaling carries the gain), else off.
  static constexpr double kContinuationAuto = -1;
  double continuation_from = kContinuationAuto;
  double continuation_factor = 10;  // ratio of consecutive continuation budgets (> 1)
  // The search's own bound is kappa_max (1 - search_slack) while the best point is tracked
  // against kappa_max: NLopt's iterates hover just outside the bound they see, so without the
  // slack a better point only counts when one lands inside (docs/optimizer.md §6). In [0, 0.5].
  double search_slack = 0.02;
  // Correction pairs kept by AUGLAG's inner L-BFGS (NLopt's vector storage; >= 0, 0 for
  // NLopt's own heuristic). With the heuristic the search creeps where err and kappa move on
  // scales eps^k apart (docs/optimizer.md §6: N = 8, c = 24, kappa_max = 1e4, 95 s: ratio 0.59;
  // 0.37 with 100). kLbfgsMemoryAuto (the default): 100, fewer for many variables n,
  // min(100, max(10, 600000 / n)): L-BFGS costs ~4 m n flops a step on one thread, and at per
  // rank N = 16, c = 32 (n = 23 553) 100 pairs added ~2.5 ms to each ~5.6 ms evaluation (§6).
  static constexpr int kLbfgsMemoryAuto = -1;
  int lbfgs_memory = kLbfgsMemoryAuto;
  // Final analysis precision (mp50 unless a test wants speed).
  Precision precision = Precision::kMp50;
  std::function<void(const OptimizeProgress&)> progress;  // optional
  double progress_interval_s = 1.0;
};

// Process-wide allocator setting for programs that run the optimiser (the cerar CLI calls it
// first thing; the library never does, as it is global state). An evaluation at per rank
// N = 16, c = 32 allocates and frees ~2 MB of temporaries per rank; with glibc's default
// (dynamic) trim and mmap thresholds that memory can go back to the kernel and be faulted in
// again every time, depending on the process's allocation history (docs/optimizer.md §6). Raises
// both thresholds (mmap 16 MiB, trim 64 MiB). Returns false where the C library is not glibc (nothing done).
bool KeepAllocatorMemory();

// Throws InvalidArgument for bad options (N < 2, c < 1, kappa_max < 1 or not finite,
// time_limit_s <= 0, max_evaluations < 1, perturbation < 0) and when no eps start point meets
// kappa_max. Returns a design whose provenance (construction "optimized") records the
// optimiser, its settings, the start point and its figures, the float64 and high-precision
// figures of the result, and "improved": false (plus a note) when the start point was kept.
Design Optimize(const OptimizeOptions& options);

// The eps construction at the eps with the smallest err_rms among those meeting the kappa
// budget: kappa_dec <= kappa_max, and kappa_enc <= kappa_max too when bound_kappa_enc.
// Found by a log-spaced scan and bisection on the float64 figures; `figures` are float64.
struct EpsAtKappa {
  double eps = 0;
  Figures figures;
};
EpsAtKappa BestEpsWithinKappa(int N, int c, double kappa_max, bool bound_kappa_enc);

// Error-vs-kappa fronts: for each of `points` log-spaced kappa targets in [kappa_from, kappa_to],
// the best eps construction with kappa_dec <= kappa (figures in `precision`) and, when
// `optimize`, the optimised design for that budget.
struct ParetoOptions {
  bool optimize = true;
  Objective objective = Objective::kRms;
  bool per_rank_encoders = false;
  double continuation_from = OptimizeOptions::kContinuationAuto;
  double time_limit_s = 60;      // per point
  int max_evaluations = 200000;  // per point
  std::uint64_t seed = 0;
  Precision precision = Precision::kMp50;
  std::function<void(const OptimizeProgress&)> progress;  // optional, per point
};
struct ParetoPoint {
  double kappa = 0;            // the budget
  bool has_eps = false;        // false when no eps meets kappa_dec <= kappa
  double eps = 0;              // eps of the eps point
  Figures eps_figures;         // eps construction, kappa_dec <= kappa
  bool has_optimized = false;  // false when !optimize or kappa_enc of eps exceeds the budget
  Figures optimized_figures;   // optimised design (== start figures when not improved)
  bool improved = false;
  double seconds = 0;  // optimiser wall time
};
std::vector<ParetoPoint> ParetoFront(int N, int c, double kappa_from, double kappa_to, int points,
                                     const ParetoOptions& options = {});

}  // namespace cerar::design
