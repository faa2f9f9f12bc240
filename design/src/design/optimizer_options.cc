// Option names, their checks (OptimizeOptions::Validate, ParetoOptions::Validate) and the
// resolution of the automatic settings.
#include <cmath>
#include <sstream>

#include "cerar/design/optimizer.h"
#include "cerar/errors.h"
#include "design/ladder.h"
#include "design/optimizer_search.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cerar::design {

Objective ParseObjective(const std::string& name) {
  if (name == "rms") return Objective::kRms;
  if (name == "op") return Objective::kOp;
  if (name == "predicted") return Objective::kPredicted;
  throw InvalidArgument("objective \"" + name + "\" is not one of rms, op, predicted");
}
std::string ToString(Objective objective) {
  switch (objective) {
    case Objective::kRms:
      return "rms";
    case Objective::kOp:
      return "op";
    case Objective::kPredicted:
      return "predicted";
  }
  return "rms";
}

Variables ParseVariables(const std::string& name) {
  if (name == "auto") return Variables::kAuto;
  if (name == "shift-invariant") return Variables::kShiftInvariant;
  if (name == "per-rank") return Variables::kPerRank;
  throw InvalidArgument("variables \"" + name + "\" is not one of auto, shift-invariant, per-rank");
}
std::string ToString(Variables variables) {
  switch (variables) {
    case Variables::kAuto:
      return "auto";
    case Variables::kShiftInvariant:
      return "shift-invariant";
    case Variables::kPerRank:
      return "per-rank";
  }
  return "auto";
}

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

Variables ResolveVariables(const OptimizeOptions& o) {
  if (o.variables != Variables::kAuto) return o.variables;
  const double per_rank = double(o.N) * (o.c + o.N - 2) * o.c;
  return per_rank <= OptimizeOptions::kPerRankMaxVariables ? Variables::kPerRank
                                                           : Variables::kShiftInvariant;
}

std::string OptimizeOptions::Validate() const {
  std::ostringstream m;
  m << "optimizer options: ";
  if (N < 2)
    m << "N = " << N << ", expected N >= 2";
  else if (c < 1)
    m << "c = " << c << ", expected c >= 1";
  else if (!WithinDesignLimits(N, c))
    m << "N = " << N << ", c = " << c << " exceed the design limits (N, c <= " << kMaxN
      << ", at most " << kMaxMatrixEntries << " matrix entries), checked before allocating";
  else if (objective != Objective::kPredicted && !(kappa_max >= 1 && std::isfinite(kappa_max)))
    m << "kappa_max = " << kappa_max << ", expected a finite value >= 1 (a condition number) for "
      << "objective " << ToString(objective) << " (objective predicted needs none)";
  else if (!(kappa_max >= 1))
    m << "kappa_max = " << kappa_max << ", expected a value >= 1 (a condition number) or none";
  else if (std::isfinite(kappa_max) && kappa_max > kMaxSearchKappa)
    m << "kappa_max = " << kappa_max << ", above " << kMaxSearchKappa
      << ": the float64 search resolves condition numbers up to that (its sigma_min comes from a "
         "Gram matrix, accurate to u kappa^2); for a larger budget use the eps construction "
         "(cerar design --eps, whose figures are certified in high precision)";
  else if (!(time_limit_s > 0) || !std::isfinite(time_limit_s))
    m << "time_limit_s = " << time_limit_s << ", expected a finite value > 0";
  else if (max_evaluations < 1)
    m << "max_evaluations = " << max_evaluations << ", expected >= 1";
  else if (max_hops < 0)
    m << "max_hops = " << max_hops << ", expected >= 0";
  else if (!(perturbation >= 0) || !std::isfinite(perturbation))
    m << "perturbation = " << perturbation << ", expected a finite value >= 0";
  else if (!(continuation_from >= 0 || continuation_from == kContinuationAuto) ||
           !std::isfinite(continuation_from))
    m << "continuation_from = " << continuation_from
      << ", expected a finite value >= 0 (0: off) or kContinuationAuto (-1)";
  else if (!(continuation_factor > 1) || !std::isfinite(continuation_factor))
    m << "continuation_factor = " << continuation_factor << ", expected a finite value > 1";
  else if (!(search_slack >= 0 && search_slack <= 0.5))
    m << "search_slack = " << search_slack << ", expected a value in [0, 0.5]";
  else if (lbfgs_memory < 0 && lbfgs_memory != kLbfgsMemoryAuto)
    m << "lbfgs_memory = " << lbfgs_memory
      << ", expected >= 0 (0: NLopt's heuristic) or kLbfgsMemoryAuto (-1)";
  else if (precision == Precision::kAuto)
    m << "precision auto: the acceptance check needs a fixed precision (float64 or mp50)";
  else if (max_digits < detail::kMp50Digits || max_digits > detail::kMaxDigits)
    m << "max_digits = " << max_digits << ", expected " << detail::kMp50Digits << " ... "
      << detail::kMaxDigits << " significant digits";
  else if (!(progress_interval_s >= 0))
    m << "progress_interval_s = " << progress_interval_s << ", expected >= 0";
  else
    return "";
  return m.str();
}

namespace opt {

OptimizeOptions PointOptions(const ParetoOptions& p, double kappa) {
  OptimizeOptions o;
  o.N = p.N;
  o.c = p.c;
  o.kappa_max = kappa;
  o.objective = p.objective;
  o.variables = p.variables;
  o.continuation_from = p.continuation_from;
  o.time_limit_s = p.time_limit_s;
  o.max_evaluations = p.max_evaluations;
  o.seed = p.seed;
  o.precision = p.precision;
  o.max_digits = p.max_digits;
  o.progress = p.progress;
  return o;
}

}  // namespace opt

std::string ParetoOptions::Validate() const {
  std::ostringstream m;
  m << "pareto options: ";
  if (!(kappa_from >= 1) || !(kappa_to >= kappa_from) || !std::isfinite(kappa_to))
    m << "kappa range " << kappa_from << ":" << kappa_to << ", expected finite 1 <= from <= to";
  else if (points < 1 || points > 1000)
    m << "points = " << points << ", expected 1 .. 1000";
  else if (points == 1 && kappa_from != kappa_to)
    m << "points = 1 with kappa range " << kappa_from << ":" << kappa_to
      << ", expected from == to for a single point";
  else if (objective == Objective::kPredicted)
    m << "objective predicted: a front is over kappa budgets, expected rms or op";
  else if (std::string o = opt::PointOptions(*this, kappa_from).Validate(); !o.empty())
    return o.replace(0, o.find(':'), "pareto options");
  else
    return "";
  return m.str();
}

bool KeepAllocatorMemory() {
#if defined(__GLIBC__)
  return mallopt(M_MMAP_THRESHOLD, 16 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
#else
  return false;
#endif
}

}  // namespace cerar::design
