// Optimize and ParetoFront: the float64 search of optimizer_search.cc, then a high-precision
// re-analysis that decides whether the result beats its eps start point (docs/optimizer.md §7).
#include "cerar/design/optimizer.h"

#include <chrono>
#include <cmath>
#include <sstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cerar/format/errors.h"
#include "design/optimizer_search.h"

namespace cerar::design {
namespace {

nlohmann::json FiguresJson(const Figures& f) {
  return {{"err_rms", f.err_rms},
          {"err_op", f.err_op},
          {"kappa_dec", f.kappa_dec},
          {"kappa_enc", f.kappa_enc},
          {"precision", f.precision}};
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

double ObjectiveOf(const Figures& f, Objective o) {
  return o == Objective::kRms ? f.err_rms : f.err_op;
}

// The figures a design carries, in `precision` (re-analysed when it carries others).
Figures FiguresIn(const Design& d, Precision precision) {
  if (d.figures() && d.figures()->precision == ToString(precision)) return *d.figures();
  return Analyse(d, precision);
}

}  // namespace

bool KeepAllocatorMemory() {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, 16 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
#else
  return false;
#endif
}

Objective ParseObjective(const std::string& name) {
  if (name == "rms") return Objective::kRms;
  if (name == "op") return Objective::kOp;
  throw InvalidArgument("objective \"" + name + "\" is not one of rms, op");
}
std::string ToString(Objective objective) { return objective == Objective::kRms ? "rms" : "op"; }

OptimizerAlgorithm ParseOptimizerAlgorithm(const std::string& name) {
  if (name == "mma") return OptimizerAlgorithm::kMma;
  if (name == "ccsaq") return OptimizerAlgorithm::kCcsaq;
  if (name == "slsqp") return OptimizerAlgorithm::kSlsqp;
  if (name == "auglag-lbfgs") return OptimizerAlgorithm::kAuglagLbfgs;
  throw InvalidArgument("optimizer algorithm \"" + name +
                        "\" is not one of auglag-lbfgs, mma, ccsaq, slsqp");
}
std::string ToString(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kMma:
      return "mma";
    case OptimizerAlgorithm::kCcsaq:
      return "ccsaq";
    case OptimizerAlgorithm::kSlsqp:
      return "slsqp";
    case OptimizerAlgorithm::kAuglagLbfgs:
      return "auglag-lbfgs";
  }
  return "mma";
}

Design Optimize(const OptimizeOptions& options) {
  opt::ValidateOptions(options);
  if (options.precision == Precision::kAuto)
    throw InvalidArgument(
        "optimizer options: precision auto: the acceptance check needs a fixed "
        "precision (float64 or mp50)");
  const int N = options.N, c = options.c;
  const opt::Evaluator ev(N, c,
                          options.per_rank_encoders ? opt::Parametrisation::kPerRank
                                                    : opt::Parametrisation::kShiftInvariant);
  const opt::Float64Run run = opt::RunFloat64(options, ev);

  // Both candidates re-analysed in the same (high) precision, on the same kappa budget.
  ConstructionOptions start_options;
  start_options.construction = Construction::kEps;
  start_options.N = N;
  start_options.c = c;
  start_options.eps = run.start_eps;
  start_options.precision = options.precision;
  const Design start = MakeConstruction(start_options);
  const Figures start_hp = FiguresIn(start, options.precision);
  const bool start_ok =
      start_hp.kappa_dec <= options.kappa_max && start_hp.kappa_enc <= options.kappa_max;

  std::optional<Design> result;
  Figures result_hp;
  bool improved = false;
  if (!run.skipped && run.search.feasible) {
    Provenance p;
    p.construction = "optimized";
    p.shift_invariant = !options.per_rank_encoders;
    result = MakeFromEncoders(N, c, ev.Encoders(run.x.data()), p, options.precision);
    result_hp = FiguresIn(*result, options.precision);
    const bool ok =
        result_hp.kappa_dec <= options.kappa_max && result_hp.kappa_enc <= options.kappa_max;
    improved = ok && (!start_ok || ObjectiveOf(result_hp, options.objective) <
                                       ObjectiveOf(start_hp, options.objective));
  }
  if (!improved && !start_ok) {
    std::ostringstream m;
    m << "optimizer: no design with kappa_dec and kappa_enc <= kappa_max = " << options.kappa_max
      << " found for N = " << N << ", c = " << c << " (eps start at eps = " << run.start_eps
      << " has kappa_dec " << start_hp.kappa_dec << ", kappa_enc " << start_hp.kappa_enc
      << "; the search stopped by " << run.search.stopped_by << ")";
    throw NumericalError(m.str());
  }

  const Design& chosen = improved ? *result : start;
  DesignParts parts = chosen.parts();
  nlohmann::json& prm = parts.provenance.parameters;
  prm = nlohmann::json::object();
  parts.provenance.construction = "optimized";
  parts.provenance.shift_invariant = improved ? !options.per_rank_encoders : true;
  prm["objective"] = ToString(options.objective);
  prm["kappa_max"] = options.kappa_max;
  prm["variables"] =
      options.per_rank_encoders ? "per_rank_encoders" : "shift_invariant_base_sequence";
  prm["normalisation"] =
      "|x| <= 2 max|x_start| (box); result scaled by a power of two so its largest row is within "
      "sqrt(2) of the start's";
  prm["optimizer"] = {
      {"library", "NLopt"},
      {"algorithm", NloptName(options.algorithm)},
      {"basin_hopping",
       "perturb the best point by N(0, a^2), a cycling 0.003, 0.01, 0.03 of its rms entry times "
       "eps_stage / eps_first in continuation stages; seeded"},
      {"formulation",
       "epigraph: min t s.t. log err_j <= t, log kappa_dec_j, log kappa_enc_i <= log(kappa_max (1 "
       "- 1e-5) (1 - search_slack)); best point tracked against kappa_max (1 - 1e-5)"},
      {"search_slack", options.search_slack},
      {"lbfgs_memory", options.lbfgs_memory},
      {"lbfgs_memory_used", opt::EffectiveLbfgsMemory(options.lbfgs_memory, ev.size() + 1)},
      {"time_limit_s", options.time_limit_s},
      {"max_evaluations", options.max_evaluations},
      {"max_hops", options.max_hops},
      {"hops", run.search.hops},
      {"seed", options.seed},
      {"perturbation", options.perturbation},
      {"continuation",
       "kappa budgets kappa_max / 10^s >= continuation_from, smallest first; each stage starts "
       "from the previous stage's design rescaled to its budget (moments of its departure from "
       "the eps construction scaled by powers of eps), or from the eps point when that is "
       "better; the first stage gets half the time and evaluations, the others split the rest"},
      {"continuation_from", opt::EffectiveContinuationFrom(options)},
      {"stages", run.search.stages},
      {"stage_starts", run.search.stage_starts},
      {"evaluations", run.search.evaluations},
      {"rounds", run.search.rounds},
      {"stopped_by", run.search.stopped_by},
      {"elapsed_s", run.search.elapsed_s}};
  prm["start"] = {{"construction", "eps"},
                  {"eps", run.start_eps},
                  {"meets_kappa_max", start_ok},
                  {"figures_float64", FiguresJson(run.start_figures)},
                  {"figures", FiguresJson(start_hp)}};
  prm["result"] = {{"figures_float64", FiguresJson(run.figures)}};
  if (result) prm["result"]["figures"] = FiguresJson(result_hp);
  prm["improved"] = improved;
  if (!improved) {
    std::ostringstream note;
    note << "optimizer: the search did not beat the eps start point (eps = " << run.start_eps
         << ") in " << ToString(options.precision) << " on kappa_max = " << options.kappa_max
         << (run.skipped ? " (the start point is exact)" : "")
         << "; this design is the start point";
    parts.notes.push_back(note.str());
  }
  return Design::Create(std::move(parts), "optimized design");
}

std::vector<ParetoPoint> ParetoFront(int N, int c, double kappa_from, double kappa_to, int points,
                                     const ParetoOptions& options) {
  if (!(kappa_from >= 1) || !(kappa_to >= kappa_from) || !std::isfinite(kappa_to)) {
    std::ostringstream m;
    m << "pareto: kappa range " << kappa_from << ":" << kappa_to
      << ", expected finite 1 <= from <= to";
    throw InvalidArgument(m.str());
  }
  if (N >= 2 && c >= 1 && !WithinDesignLimits(N, c)) {
    throw InvalidArgument("pareto: N = " + std::to_string(N) + ", c = " + std::to_string(c) +
                          " exceed the design limits (N, c <= " + std::to_string(kMaxN) +
                          ", at most " + std::to_string(kMaxMatrixEntries) + " matrix entries)");
  }
  if (points < 1 || (points == 1 && kappa_from != kappa_to))
    throw InvalidArgument("pareto: points = " + std::to_string(points) +
                          ", expected >= 1 (and from == to for a single point)");
  std::vector<ParetoPoint> front;
  for (int k = 0; k < points; ++k) {
    ParetoPoint p;
    p.kappa = points == 1
                  ? kappa_from
                  : std::exp(std::log(kappa_from) +
                             (std::log(kappa_to) - std::log(kappa_from)) * k / (points - 1));
    try {
      p.eps = BestEpsWithinKappa(N, c, p.kappa, /*bound_kappa_enc=*/false).eps;
      p.has_eps = true;
    } catch (const InvalidArgument&) {
      p.has_eps = false;  // no eps meets this budget; the optimiser may still find a design
    }
    if (p.has_eps) {
      ConstructionOptions co;
      co.N = N;
      co.c = c;
      co.eps = p.eps;
      co.precision = options.precision;
      p.eps_figures = FiguresIn(MakeConstruction(co), options.precision);
    }
    if (options.optimize) {
      OptimizeOptions oo;
      oo.N = N;
      oo.c = c;
      oo.kappa_max = p.kappa;
      oo.objective = options.objective;
      oo.per_rank_encoders = options.per_rank_encoders;
      oo.continuation_from = options.continuation_from;
      oo.time_limit_s = options.time_limit_s;
      oo.max_evaluations = options.max_evaluations;
      oo.seed = options.seed;
      oo.precision = options.precision;
      oo.progress = options.progress;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        const Design d = Optimize(oo);
        p.optimized_figures = FiguresIn(d, options.precision);
        p.improved = d.provenance().parameters.value("improved", false);
        p.has_optimized = true;
      } catch (const NumericalError&) {
        p.has_optimized = false;  // no design meets this budget
      } catch (const InvalidArgument&) {
        p.has_optimized = false;  // c <= N and the exact construction exceeds this budget
      }
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    front.push_back(p);
  }
  return front;
}

}  // namespace cerar::design
