// The optimiser's float64 run (docs/optimizer.md §5-§6), in named stages:
//
//   ChooseStart     the eps point for the budget (or for the target arithmetic)
//   PlanStages      the kappa-continuation budgets, the figure each stage searches and, for a
//                   predicted error, the arithmetic (float32+acc64: a float32 run first)
//   StageBudget     the share of time and evaluations each stage may use
//   SearchFresh     a stage from an eps point: shift-invariant warm start, then per rank
//   CarryOver       a later stage's start: the previous design rescaled, or the eps point
//   RunStage        one stage: its budgets, its start (CarryOver or SearchFresh), its search
//   NormaliseGauge  the result scaled by a power of two to the start's packet size
//
// RunFloat64 chains them; every stage reports into one SearchResult.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "design/optimizer_search.h"
#include "design/optimizer_transfer.h"

namespace cerar::design::opt {
namespace {

using Clock = std::chrono::steady_clock;
using Norm = Evaluator::ErrorNorm;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kKappaMargin = 1e-5;  // the search's bound: kappa_max (1 - margin), for mp50

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

bool PerRank(const OptimizeOptions& o) { return ResolveVariables(o) == Variables::kPerRank; }

Norm NormOf(Objective objective) {
  switch (objective) {
    case Objective::kRms:
      return Norm::kFrobenius;
    case Objective::kOp:
      return Norm::kSchatten;
    case Objective::kPredicted:
      return Norm::kPredicted;
  }
  return Norm::kFrobenius;
}

// --- ChooseStart -----------------------------------------------------------------------------
// The eps point with the smallest err_rms meeting the budget (kRms, kOp), or with the smallest
// predicted error (kPredicted). When no eps meets the budget: the eps of smallest kappa, and the
// search has to find feasibility itself.
EpsAtKappa ChooseStart(const OptimizeOptions& o) {
  if (o.objective == Objective::kPredicted)
    return BestEpsForTarget(o.N, o.c, o.target, o.kappa_max);
  return BestEpsWithinKappa(o.N, o.c, o.kappa_max, /*bound_kappa_enc=*/true);
}

// The seeded perturbation of the start (seed 0: none), so seeds explore other local optima.
Eigen::VectorXd Perturbed(const Eigen::VectorXd& x, const OptimizeOptions& o) {
  Eigen::VectorXd y = x;
  if (o.seed == 0 || o.perturbation == 0) return y;
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double scale = o.perturbation * x.norm() / std::sqrt(double(x.size()));
  for (int k = 0; k < y.size(); ++k) y(k) += scale * normal(rng);
  return y;
}

// --- PlanStages ------------------------------------------------------------------------------
struct Stage {
  double kappa = kInf;  // the budget (infinite: none)
  Norm norm = Norm::kFrobenius;
  Arithmetic target = Arithmetic::kFloat32;  // of Norm::kPredicted
};

std::optional<Arithmetic> PrecursorOf(const OptimizeOptions& o) {
  if (o.objective == Objective::kPredicted && (o.target == Arithmetic::kFloat32Acc64 ||
                                               o.target == Arithmetic::kFloat32Acc64Feedback ||
                                               o.target == Arithmetic::kFloat32State64))
    return Arithmetic::kFloat32;
  return std::nullopt;
}

// Rescaled continuation (§6): budgets kappa_max / f^s >= continuation_from, smallest first, on
// the objective's figure, then kappa_max. kPredicted: the continuation budgets below the start's
// kappa (err_rms under each), then the predicted error under kappa_max.
// float32+acc64, float32+acc64+feedback and float32+state64 (PrecursorOf): the stages of a
// float32 run (from the float32 eps start), then the target's error from its design. Searched
// from its own eps start, whose kappa is ~1e5 at c = 3N, the acc64 search lands in worse optima
// than the float32 design rescaled to a larger budget (docs/optimizer.md §8b: N = 8, c = 24,
// 100 s, measured 3.74e-3 against 2.08e-3).
std::vector<Stage> PlanStages(const OptimizeOptions& o, const Figures& start) {
  const double from = EffectiveContinuationFrom(o), f = o.continuation_factor;
  const Norm norm = NormOf(o.objective);
  std::vector<Stage> stages;
  if (const auto precursor = PrecursorOf(o)) {
    OptimizeOptions first = o;
    first.target = *precursor;
    stages = PlanStages(first, BestEpsForTarget(o.N, o.c, *precursor, o.kappa_max).figures);
    stages.push_back({o.kappa_max, norm, o.target});
    return stages;
  }
  if (o.objective == Objective::kPredicted) {
    const double top = std::min(o.kappa_max, std::max(start.kappa_dec, start.kappa_enc));
    if (from > 0)
      for (double k = from; k < top * (1 - 1e-9); k *= f) stages.push_back({k, Norm::kFrobenius});
    stages.push_back({o.kappa_max, norm, o.target});
    return stages;
  }
  if (from > 0)
    for (double k = o.kappa_max / f; k >= from * (1 - 1e-9); k /= f)
      stages.insert(stages.begin(), Stage{k, norm});
  stages.push_back({o.kappa_max, norm});
  return stages;
}

// --- StageBudget -----------------------------------------------------------------------------
// Share of the budgets used up by the end of stage st of S: the first stage gets half, the
// others split the rest. The first stage is the hard one (from the eps point, where the gain is
// made); later stages refine a transferred design (N = 16, c = 32, kappa_max = 1e4: ratio 0.45
// with half, 0.82 with a third, docs/optimizer.md §9).
double StageEnd(int st, int S) { return S == 1 ? 1.0 : 0.5 + 0.5 * st / (S - 1); }
// With a precursor (PrecursorOf) its stages share the first PrecursorShare of the budgets and
// the target's stage gets the rest. The target's stage starts from a design already in its
// basin; the float32 stage crosses plateaus, and a drop it makes after its deadline is lost
// (docs/optimizer.md §8b). Up to kSmallProblem variables (N = 8, c = 24 per rank: 5 760) the
// target's stage converges within ~15 s of 100 and gets a quarter: at N = 8, c = 24 with a
// third, one float32+state64 run in five handed over before the float32 stage's drop (2.23e-3
// measured, against 1.78-1.89e-3). Above (N = 16, c = 48: 47 616) it still improves at the
// deadline of its third (2.72e-3 -> 2.35-2.46e-3 in ~27 s) and keeps it.
constexpr int kSmallProblem = 12000;
double PrecursorShare(int variables) { return variables <= kSmallProblem ? 0.75 : 2.0 / 3.0; }
double StageEnd(int st, int S, double precursor_share) {  // 0: no precursor
  if (precursor_share == 0 || st == S - 1) return StageEnd(st, S);
  return precursor_share * StageEnd(st, S - 1);
}

// --- SearchFresh -----------------------------------------------------------------------------
// A stage from the eps point x (in ev's layout; base: the same point shift-invariant, both with
// the run's seeded perturbation). Per rank,
// a per-rank evaluation costs ~N times a shift-invariant one, so the first sixth of the time (a
// third of the evaluations) goes to the shift-invariant problem and the per-rank search continues
// from its best point (docs/optimizer.md §6, §9).
SearchResult SearchFresh(const Evaluator& ev, bool per_rank, const Eigen::VectorXd& x,
                         const Eigen::VectorXd& base, Arithmetic target,
                         SearchSettings settings, int* progress_base) {
  settings.box = 2 * x.cwiseAbs().maxCoeff();
  if (!per_rank) return Search(ev, x, settings);
  const Evaluator shift(ev.N(), ev.c(), Parametrisation::kShiftInvariant, target);
  SearchSettings warm = settings;
  warm.time_limit_s = settings.time_limit_s / 6;
  warm.max_evaluations = std::max(1, settings.max_evaluations / 3);
  warm.box = 2 * base.cwiseAbs().maxCoeff();
  const SearchResult w = Search(shift, base, warm);
  const Eigen::VectorXd xs = w.feasible ? ShiftInvariantToPerRank(ev.N(), ev.c(), w.x) : x;
  SearchSettings rest = settings;
  rest.time_limit_s = std::max(1e-3, settings.time_limit_s - w.elapsed_s);
  rest.max_evaluations = std::max(1, settings.max_evaluations - w.evaluations);
  rest.box = 2 * xs.cwiseAbs().maxCoeff();
  *progress_base += w.evaluations;
  SearchResult r = Search(ev, xs, rest);
  r.Add(w);
  return r;
}

// --- CarryOver -------------------------------------------------------------------------------
// The start of a later stage: the previous stage's design rescaled to this stage's budget
// (optimizer_transfer.h; for the last stage of kPredicted, which has no budget to fit, the
// previous design as it is), unless the eps point for this budget is better. `how` says which.
struct Carried {
  bool fresh = true;  // start from the eps point instead
  Transfer transfer;
  std::string how;
};
Carried CarryOver(const Evaluator& ev, bool per_rank, const Stage& stage,
                  const Eigen::VectorXd& previous, double previous_eps, double previous_log_err,
                  double stage_eps, const Stage& previous_stage) {
  Carried out;
  // From a predicted-error stage in another arithmetic (PrecursorOf).
  const bool new_arithmetic = stage.norm == Norm::kPredicted &&
                              previous_stage.norm == Norm::kPredicted &&
                              previous_stage.target != stage.target;
  const bool to_predicted =
      stage.norm == Norm::kPredicted && (previous_stage.norm != stage.norm || new_arithmetic);
  const bool kappas = std::isfinite(stage.kappa);
  if (to_predicted) {
    // No budget to fit: the predicted error prices kappa. The previous design (optimised for
    // err_rms at a smaller budget, or for the predicted error in a coarser arithmetic) rescaled
    // to kappas up to 16 times larger (than its budget, or than its kappa), and as it is; the
    // smallest predicted error wins. (Fitting budgets from_kappa 2^(k/2), k = 1 .. 8, one
    // bisection each, found the same starts at ~20 times the evaluations: 12 s of an 80 s run at
    // N = 16, c = 48.)
    const auto r = ev.Evaluate(previous.data(), stage.norm, false, true);
    const double from_kappa =
        previous_stage.norm == Norm::kPredicted
            ? std::exp(std::max(MaxOf(r.log_kappa_dec), MaxOf(r.log_kappa_enc)))
            : previous_stage.kappa;
    if (r.singular || !std::isfinite(from_kappa)) {
      out.transfer.x = previous;
      out.transfer.log_err = r.singular ? kInf : MaxOf(r.log_err);
      out.transfer.how = "previous best";
    } else {
      out.transfer = RescaleForError(ev, per_rank, previous, previous_eps,
                                     std::min(16 * from_kappa, stage.kappa * (1 - kKappaMargin)),
                                     stage.norm);
    }
    ++out.transfer.evaluations;
  } else if (!kappas) {
    const auto r = ev.Evaluate(previous.data(), stage.norm, false, kappas);
    out.transfer.x = previous;
    out.transfer.log_err = r.singular ? kInf : MaxOf(r.log_err);
    out.transfer.how = "previous best";
    out.transfer.evaluations = 1;
  } else {
    out.transfer = RescaleToBudget(ev, per_rank, previous, previous_eps, stage_eps,
                                   stage.kappa * (1 - kKappaMargin), stage.norm);
  }
  const auto e = ev.Evaluate(EpsPoint(ev.N(), ev.c(), stage_eps, per_rank).data(), stage.norm,
                             false, kappas);
  ++out.transfer.evaluations;
  // (The eps point sits on the budget's boundary; its kappa may exceed the search's bound,
  // which keeps a margin, by a hair: compare errors regardless.)
  const double eps_log_err = e.singular ? kInf : MaxOf(e.log_err);
  out.fresh = !(out.transfer.log_err < eps_log_err);
  std::ostringstream how;
  how << "kappa " << stage.kappa << (stage.norm == Norm::kPredicted ? " (predicted error)" : "")
      << (new_arithmetic ? " in " + ToString(stage.target) + " from the " +
                               ToString(previous_stage.target) + " design"
                         : "")
      << ": " << out.transfer.how << ", figure " << std::exp(out.transfer.log_err)
      << " (previous stage err " << std::exp(previous_log_err) << ", eps point "
      << std::exp(eps_log_err) << ")" << (out.fresh ? "; started from the eps point instead" : "");
  out.how = how.str();
  return out;
}

// --- NormaliseGauge --------------------------------------------------------------------------
// Every figure is invariant under x -> s x; scale by a power of two (bit-exact figures) so the
// largest row of C (or E) is within sqrt(2) of the start's.
double MaxRowNorm(const Eigen::VectorXd& x, int c) {
  double m = 0;
  for (int r = 0; r < x.size() / c; ++r) m = std::max(m, x.segment(r * c, c).norm());
  return m;
}
Eigen::VectorXd NormaliseGauge(const Eigen::VectorXd& x, const Eigen::VectorXd& start, int c) {
  const double ratio = MaxRowNorm(start, c) / MaxRowNorm(x, c);
  return x * std::exp2(std::round(std::log2(ratio)));
}

// The eps of the eps point a stage searches from when it starts afresh.
double StageEps(const OptimizeOptions& o, const Stage& stage, bool last, double start_eps) {
  if (last) return start_eps;
  if (stage.norm == Norm::kPredicted)
    return BestEpsForTarget(o.N, o.c, stage.target, o.kappa_max).eps;
  const EpsAtKappa e = BestEpsWithinKappa(o.N, o.c, stage.kappa, /*bound_kappa_enc=*/true);
  return e.eps;  // the eps of smallest kappa when none meets the budget
}

// --- RunStage --------------------------------------------------------------------------------
// The search settings every stage shares.
SearchSettings BaseSettings(const OptimizeOptions& o) {
  SearchSettings settings;
  settings.algorithm = o.algorithm;
  settings.seed = o.seed;
  settings.max_hops = o.max_hops;
  settings.slack = o.search_slack;
  settings.lbfgs_memory = o.lbfgs_memory;
  settings.progress_interval_s = o.progress_interval_s;
  return settings;
}

// What the stages so far have found, and the run's clocks.
struct RunState {
  Clock::time_point started;
  Eigen::VectorXd x0;       // the run's start with its seeded perturbation
  Eigen::VectorXd current;  // best point of the previous stages (empty: none feasible yet)
  double first_eps = 0;     // eps of the first stage's start
  double current_eps = 0;   // eps of the eps point `current` departs from
  double current_log_err = 0;
  int progress_base = 0;  // evaluations before the running search (for progress reports)
  std::vector<std::string> stage_starts;
};

// Stage st: its budgets (StageEnd of the run's time and evaluations, less what was used), its
// start (CarryOver, or SearchFresh from the eps point for its budget), its search. `ev`
// evaluates the stage's figure (for Norm::kPredicted, in the stage's arithmetic).
SearchResult RunStage(const OptimizeOptions& o, const Evaluator& ev,
                      const std::vector<Stage>& stages, int st, const Float64Run& run,
                      SearchSettings settings, int evaluations_used, RunState& state) {
  const int S = int(stages.size());
  const bool last = st == S - 1, per_rank = PerRank(o);
  const Stage& stage = stages[st];
  const double end = StageEnd(st, S, run.precursor_share);
  settings.norm = stage.norm;
  settings.kappa_bound = std::isfinite(stage.kappa) ? stage.kappa * (1 - kKappaMargin) : kInf;
  // The budgets are what is left after the start is chosen (CarryOver evaluates designs too).
  auto budget = [&](int carry_evaluations) {
    settings.time_limit_s = std::max(1e-3, o.time_limit_s * end - Seconds(state.started));
    settings.max_evaluations =
        std::max(1, int(o.max_evaluations * end) - evaluations_used - carry_evaluations);
  };
  const double stage_eps = StageEps(o, stage, last, run.start_eps);
  state.progress_base = evaluations_used;
  SearchResult r;
  int carry_evaluations = 0;
  budget(0);
  if (state.current.size() > 0) {
    const Carried carried = CarryOver(ev, per_rank, stage, state.current, state.current_eps,
                                      state.current_log_err, stage_eps, stages[st - 1]);
    state.stage_starts.push_back(carried.how);
    carry_evaluations = carried.transfer.evaluations;
    state.progress_base += carry_evaluations;
    budget(carry_evaluations);
    if (!carried.fresh) {
      // Hops scaled with eps: the design's departure from the eps construction shrinks with
      // eps (§6), and hops sized for the first stage would throw the search out of its basin.
      settings.box = 2 * carried.transfer.x.cwiseAbs().maxCoeff();
      settings.hop_scale = state.current_eps * carried.transfer.scale / state.first_eps;
      r = Search(ev, carried.transfer.x, settings);
      state.current_eps *= carried.transfer.scale;  // departs from X_eps(current_eps s)
    }
  }
  if (r.x.size() == 0) {
    // From the eps point for this stage's budget (the run's own start on the last stage), with
    // the run's seeded perturbation.
    Eigen::VectorXd xs = state.x0;
    if (!last) xs = EpsPoint(o.N, o.c, stage_eps, per_rank) + (state.x0 - run.start_x);
    r = SearchFresh(ev, per_rank, xs, Perturbed(EpsBaseSequence(o.N, o.c, stage_eps), o),
                    stage.norm == Norm::kPredicted ? stage.target : o.target, settings,
                    &state.progress_base);
    state.current_eps = stage_eps;
    if (st == 0) state.first_eps = stage_eps;
  }
  r.evaluations += carry_evaluations;
  if (r.feasible) {
    state.current = r.x;
    state.current_log_err = std::log(r.objective);
  }
  return r;
}

}  // namespace

double EffectiveContinuationFrom(const OptimizeOptions& o) {
  if (o.continuation_from != OptimizeOptions::kContinuationAuto) return o.continuation_from;
  return o.c <= 2 * o.N ? 100.0 : 0.0;
}

Float64Run RunFloat64(const OptimizeOptions& options, const Evaluator& ev) {
  const int N = options.N, c = options.c;
  Float64Run run;
  const EpsAtKappa start = ChooseStart(options);
  run.start_eps = start.eps;
  run.start_feasible = start.feasible;
  run.start_x = EpsPoint(N, c, run.start_eps, PerRank(options));
  run.start_figures = ev.Analyse(run.start_x.data());
  run.x = run.start_x;
  run.figures = run.start_figures;
  if (c <= N && options.objective != Objective::kPredicted) {
    // The eps construction is exact: nothing to gain, or (over the budget) nothing to search.
    run.skipped = true;
    run.search.stopped_by = run.start_feasible ? "start point exact" : "exact start over budget";
    run.search.x = run.start_x;
    run.search.feasible = run.start_feasible;
    return run;
  }

  // Progress counts evaluations and time over the whole run, across stages and warm starts.
  SearchSettings settings = BaseSettings(options);
  RunState state;
  state.started = Clock::now();
  state.x0 = Perturbed(run.start_x, options);
  if (options.progress)
    settings.progress = [&state, user = options.progress](const OptimizeProgress& p) {
      OptimizeProgress q = p;
      q.evaluations += state.progress_base;
      q.elapsed_s = Seconds(state.started);
      user(q);
    };
  const std::vector<Stage> stages = PlanStages(options, run.start_figures);
  // A stage in another arithmetic than the run's (PrecursorOf) gets its own evaluator.
  run.precursor = PrecursorOf(options);
  if (run.precursor) run.precursor_share = PrecursorShare(ev.size());
  std::optional<Evaluator> precursor;
  if (run.precursor)
    precursor.emplace(N, c, PerRank(options) ? Parametrisation::kPerRank
                                             : Parametrisation::kShiftInvariant,
                      *run.precursor);
  SearchResult total;
  for (int st = 0; st < int(stages.size()); ++st) {
    const Stage& stage = stages[st];
    const bool other = stage.norm == Norm::kPredicted && stage.target != options.target;
    const SearchResult r = RunStage(options, other ? *precursor : ev, stages, st, run, settings,
                                    total.evaluations, state);
    total.Add(r);
    if (st == int(stages.size()) - 1) {
      total.x = r.x;
      total.feasible = r.feasible;
      total.objective = r.objective;
      total.stopped_by = r.stopped_by;
    }
  }
  run.stages = int(stages.size());
  run.stage_starts = state.stage_starts;
  run.search = total;
  run.x = NormaliseGauge(run.search.x, run.start_x, c);
  run.figures = ev.Analyse(run.x.data());
  return run;
}

}  // namespace cerar::design::opt
