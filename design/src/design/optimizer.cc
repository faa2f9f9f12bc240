// TryOptimize and ParetoFront: the float64 run of optimizer_run.cc, then a high-precision
// re-analysis that decides whether the result beats its eps start point (docs/optimizer.md §7),
// and the provenance that makes the design reproducible.
#include "cerar/design/optimizer.h"

#include <chrono>
#include <cmath>
#include <sstream>
#include <utility>

#include "cerar/errors.h"
#include "design/optimizer_search.h"

namespace cerar::design {
namespace {

nlohmann::json FiguresJson(const Figures& f) {
  nlohmann::json j = {{"err_rms", f.err_rms},
                      {"err_op", f.err_op},
                      {"kappa_dec", f.kappa_dec},
                      {"kappa_enc", f.kappa_enc},
                      {"precision", f.precision}};
  if (!f.predicted_error.empty()) j["predicted_error"] = f.predicted_error;
  return j;
}

std::string NloptName(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kMma:
      return "LD_MMA";
    case OptimizerAlgorithm::kCcsaq:
      return "LD_CCSAQ";
    case OptimizerAlgorithm::kSlsqp:
      return "LD_SLSQP";
    case OptimizerAlgorithm::kAuglagLbfgs:
      return "AUGLAG (local LD_LBFGS)";
  }
  return "?";
}

double ObjectiveOf(const Figures& f, const OptimizeOptions& o) {
  switch (o.objective) {
    case Objective::kRms:
      return f.err_rms;
    case Objective::kOp:
      return f.err_op;
    case Objective::kPredicted:
      return PredictedError(f, o.N, o.c, o.target);
  }
  return f.err_rms;
}

// The figures a design carries, in `precision` (re-analysed when it carries others).
Figures FiguresIn(const Design& d, Precision precision, int max_digits) {
  if (d.figures() && (d.figures()->precision == ToString(precision) ||
                      (precision == Precision::kMp50 && !d.figures()->certified_digits.empty())))
    return *d.figures();
  return Analyse(d, precision, max_digits);
}

bool MeetsBudget(const Figures& f, double kappa_max) {
  return f.kappa_dec <= kappa_max && f.kappa_enc <= kappa_max;
}

// The result and its start point, both analysed in options.precision on the same budget; the
// result is kept when it meets the budget and beats the start there. The start is analysed from
// its float64 encoders (as the result is); the eps construction itself, whose high-precision
// derivation also analyses the unrounded construction, is built only when it is returned.
struct Acceptance {
  Figures start_hp;
  bool start_ok = false;
  std::optional<Design> result;
  Figures result_hp;
  bool improved = false;
};
Acceptance AcceptInHighPrecision(const OptimizeOptions& o, const opt::Evaluator& ev,
                                 const opt::Float64Run& run) {
  Acceptance a;
  Provenance p;
  p.construction = "optimized";
  p.shift_invariant = ResolveVariables(o) == Variables::kShiftInvariant;
  a.start_hp = FiguresIn(MakeFromEncoders(o.N, o.c, ev.Encoders(run.start_x.data()), p,
                                          o.precision, o.max_digits),
                         o.precision, o.max_digits);
  a.start_ok = MeetsBudget(a.start_hp, o.kappa_max);
  if (run.skipped || !run.search.feasible) return a;
  a.result = MakeFromEncoders(o.N, o.c, ev.Encoders(run.x.data()), p, o.precision,
                              o.max_digits);
  a.result_hp = FiguresIn(*a.result, o.precision, o.max_digits);
  a.improved = MeetsBudget(a.result_hp, o.kappa_max) &&
               (!a.start_ok || ObjectiveOf(a.result_hp, o) < ObjectiveOf(a.start_hp, o));
  return a;
}

// The eps start point as the toolkit builds it (returned when the search did not beat it).
Design StartDesign(const OptimizeOptions& o, double eps) {
  ConstructionOptions start;
  start.construction = Construction::kEps;
  start.N = o.N;
  start.c = o.c;
  start.eps = eps;
  start.precision = o.precision;
  start.max_digits = o.max_digits;
  return MakeConstruction(start);
}

std::string Infeasible(const OptimizeOptions& o, const opt::Float64Run& run,
                       const Acceptance& a) {
  std::ostringstream m;
  m << "optimizer: no design with kappa_dec and kappa_enc <= kappa_max = " << o.kappa_max
    << " found for N = " << o.N << ", c = " << o.c << " (eps start at eps = " << run.start_eps
    << " has kappa_dec " << a.start_hp.kappa_dec << ", kappa_enc " << a.start_hp.kappa_enc
    << "; the search stopped by " << run.search.stopped_by << ")";
  return m.str();
}

// Everything needed to rerun the design, and what the run did.
nlohmann::json ProvenanceParameters(const OptimizeOptions& o, const opt::Evaluator& ev,
                                    const opt::Float64Run& run, const Acceptance& a) {
  const bool per_rank = ResolveVariables(o) == Variables::kPerRank;
  nlohmann::json prm = nlohmann::json::object();
  prm["objective"] = ToString(o.objective);
  if (o.objective == Objective::kPredicted) {
    prm["target"] = ToString(o.target);
    prm["objective_figure"] =
        "predicted error in " + ToString(o.target) + " (docs/error-model.md): err_rms and "
        "rounding amplified by the decoder, max over ranks";
  }
  prm["kappa_max"] = std::isfinite(o.kappa_max) ? nlohmann::json(o.kappa_max) : nlohmann::json();
  prm["variables"] = per_rank ? "per_rank_encoders" : "shift_invariant_base_sequence";
  prm["variables_requested"] = ToString(o.variables);
  prm["normalisation"] =
      "|x| <= 2 max|x_start| (box); result scaled by a power of two so its largest row is within "
      "sqrt(2) of the start's";
  prm["optimizer"] = {
      {"library", "NLopt"},
      {"algorithm", NloptName(o.algorithm)},
      {"basin_hopping",
       "perturb the best point by N(0, a^2), a cycling 0.003, 0.01, 0.03 of its rms entry times "
       "eps_stage / eps_first in continuation stages; seeded"},
      {"formulation",
       "epigraph: min t s.t. log figure_j <= t, and where kappa is bounded log kappa_dec_j, log "
       "kappa_enc_i <= log(kappa_max (1 - 1e-5) (1 - search_slack)); best point tracked "
       "against kappa_max (1 - 1e-5)"},
      {"search_slack", o.search_slack},
      {"lbfgs_memory", o.lbfgs_memory},
      {"lbfgs_memory_used", opt::EffectiveLbfgsMemory(o.lbfgs_memory, ev.size() + 1)},
      {"time_limit_s", o.time_limit_s},
      {"max_evaluations", o.max_evaluations},
      {"max_hops", o.max_hops},
      {"hops", run.search.hops},
      {"seed", o.seed},
      {"perturbation", o.perturbation},
      {"continuation",
       "kappa budgets kappa_max / 10^s >= continuation_from, smallest first (objective "
       "predicted: the budgets from continuation_from up to the start's kappa, on err_rms, then "
       "the predicted error); each stage starts from the previous stage's design rescaled to "
       "its budget (moments of its departure from the eps construction scaled by powers of "
       "eps), or from the eps point when that is better; the first stage gets half the time "
       "and evaluations, the others split the rest"},
      {"continuation_from", opt::EffectiveContinuationFrom(o)},
      {"stages", run.stages},
      {"stage_starts", run.stage_starts},
      {"evaluations", run.search.evaluations},
      {"rounds", run.search.rounds},
      {"stopped_by", run.search.stopped_by},
      {"elapsed_s", run.search.elapsed_s}};
  if (run.precursor) {
    const std::string before = ToString(*run.precursor), target = ToString(o.target);
    prm["optimizer"]["precursor"] =
        "the stages of a " + before + " run (from the " + before +
        " eps start, with the continuation above) come first, in precursor_share of the time "
        "and evaluations (three quarters up to 12000 variables, else two thirds); the " +
        target +
        " stage, in the rest, starts from its design rescaled to kappas up to 16 times its own, "
        "or as it is, or from the eps point, whichever is best";
    prm["optimizer"]["precursor_share"] = run.precursor_share;
  }
  prm["start"] = {{"construction", "eps"},
                  {"eps", run.start_eps},
                  {"chosen_by", o.objective == Objective::kPredicted
                                    ? "smallest predicted error in " + ToString(o.target)
                                    : std::string("smallest err_rms within kappa_max")},
                  {"meets_kappa_max", a.start_ok},
                  {"figures_float64", FiguresJson(run.start_figures)},
                  {"figures", FiguresJson(a.start_hp)}};
  prm["result"] = {{"figures_float64", FiguresJson(run.figures)}};
  if (a.result) prm["result"]["figures"] = FiguresJson(a.result_hp);
  prm["improved"] = a.improved;
  prm["analysis"] = {{"precision", ToString(o.precision)}, {"max_digits", o.max_digits}};
  return prm;
}

}  // namespace

OptimizeResult TryOptimize(const OptimizeOptions& options) {
  if (const std::string why = options.Validate(); !why.empty()) throw InvalidArgument(why);
  const bool per_rank = ResolveVariables(options) == Variables::kPerRank;
  const opt::Evaluator ev(options.N, options.c,
                          per_rank ? opt::Parametrisation::kPerRank
                                   : opt::Parametrisation::kShiftInvariant,
                          options.target);
  const opt::Float64Run run = opt::RunFloat64(options, ev);
  const Acceptance a = AcceptInHighPrecision(options, ev, run);
  if (!a.improved && !a.start_ok) return OptimizeResult{std::nullopt, Infeasible(options, run, a)};

  DesignParts parts = (a.improved ? *a.result : StartDesign(options, run.start_eps)).parts();
  parts.provenance.construction = "optimized";
  parts.provenance.shift_invariant = a.improved ? !per_rank : true;
  parts.provenance.parameters = ProvenanceParameters(options, ev, run, a);
  if (!a.improved) {
    std::ostringstream note;
    note << "optimizer: the search did not beat the eps start point (eps = " << run.start_eps
         << ") in " << ToString(options.precision) << " on kappa_max = " << options.kappa_max
         << (run.skipped ? " (the start point is exact)" : "")
         << "; this design is the start point";
    parts.notes.push_back(note.str());
  }
  return OptimizeResult{Design::Create(std::move(parts), "optimized design"), ""};
}

Design Optimize(const OptimizeOptions& options) {
  OptimizeResult r = TryOptimize(options);
  if (!r.design) throw NumericalError(r.infeasible);
  return std::move(*r.design);
}

std::vector<ParetoPoint> ParetoFront(const ParetoOptions& options) {
  if (const std::string why = options.Validate(); !why.empty()) throw InvalidArgument(why);
  const int points = options.points;
  std::vector<ParetoPoint> front;
  for (int k = 0; k < points; ++k) {
    ParetoPoint p;
    p.kappa = points == 1 ? options.kappa_from
                          : std::exp(std::log(options.kappa_from) +
                                     (std::log(options.kappa_to) - std::log(options.kappa_from)) *
                                         k / (points - 1));
    const EpsAtKappa e = BestEpsWithinKappa(options.N, options.c, p.kappa, false);
    p.has_eps = e.feasible;  // else no eps meets this budget; the optimiser may still find one
    if (p.has_eps) {
      ConstructionOptions co;
      co.N = options.N;
      co.c = options.c;
      co.eps = p.eps = e.eps;
      co.precision = options.precision;
      co.max_digits = options.max_digits;
      p.eps_figures = FiguresIn(MakeConstruction(co), options.precision, options.max_digits);
    }
    if (options.optimize) {
      const auto t0 = std::chrono::steady_clock::now();
      OptimizeResult r = TryOptimize(opt::PointOptions(options, p.kappa));
      if (r.design) {
        p.optimized_figures = FiguresIn(*r.design, options.precision, options.max_digits);
        p.improved = r.design->provenance().parameters.value("improved", false);
        p.has_optimized = true;
      } else {
        p.infeasible = r.infeasible;
      }
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    front.push_back(p);
  }
  return front;
}

}  // namespace cerar::design
