// Float64 search for the optimiser (docs/optimizer.md §5-§6).
#include "design/optimizer_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <nlopt.hpp>
#include <random>
#include <sstream>

#include "cerar/format/errors.h"
#include "design/optimizer_transfer.h"

namespace cerar::design::opt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

nlopt::algorithm ToNlopt(OptimizerAlgorithm a) {
  switch (a) {
    case OptimizerAlgorithm::kMma:
      return nlopt::LD_MMA;
    case OptimizerAlgorithm::kCcsaq:
      return nlopt::LD_CCSAQ;
    case OptimizerAlgorithm::kSlsqp:
      return nlopt::LD_SLSQP;
    case OptimizerAlgorithm::kAuglagLbfgs:
      return nlopt::AUGLAG;
  }
  return nlopt::LD_MMA;
}

// State shared by the NLopt callbacks of one Search.
struct SearchState {
  const Evaluator* ev = nullptr;
  const SearchSettings* settings = nullptr;
  double log_kappa = 0;        // bound for the best-point tracking
  double log_kappa_search = 0;  // bound NLopt sees (tighter by the slack)
  Clock::time_point start, last_progress;
  int evaluations = 0;
  bool out_of_evaluations = false, out_of_time = false;
  Eigen::VectorXd best_x;
  double best_log = kInf;
  double last_worst = 0;
  Evaluator::Result result;  // reused by every evaluation
  std::exception_ptr error;  // thrown by the progress callback; rethrown after NLopt returns

  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

// Epigraph objective: minimise t (the last variable).
double Objective(unsigned n, const double* y, double* grad, void* data) {
  (void)data;
  if (grad) {
    std::fill(grad, grad + n, 0.0);
    grad[n - 1] = 1.0;
  }
  return y[n - 1];
}

// Constraints, 3N of them: log err_j - t, log kappa_dec_j - log kappa, log kappa_enc_i - log kappa.
void Constraints(unsigned m, double* result, unsigned n1, const double* y, double* grad,
                 void* data) {
  auto& s = *static_cast<SearchState*>(data);
  if (s.evaluations >= s.settings->max_evaluations) {
    s.out_of_evaluations = true;
    throw nlopt::forced_stop();
  }
  if (s.Elapsed() >= s.settings->time_limit_s) {
    s.out_of_time = true;
    throw nlopt::forced_stop();
  }
  const int N = s.ev->N(), n = s.ev->size();
  // Gradients straight into NLopt's rows (row i: constraint i, n1 = n + 1 entries).
  Evaluator::Result& r = s.result;
  s.ev->EvaluateInto(y, s.settings->norm, r, grad, n1);
  ++s.evaluations;
  const double t = y[n];
  for (int j = 0; j < N; ++j) {
    result[j] = r.log_err[j] - t;
    result[N + j] = r.log_kappa_dec[j] - s.log_kappa_search;
    result[2 * N + j] = r.log_kappa_enc[j] - s.log_kappa_search;
  }
  if (grad)
    for (int i = 0; i < int(m); ++i) grad[std::size_t(i) * n1 + n] = i < N ? -1.0 : 0.0;
  // Track the best point meeting the kappa bound, whatever NLopt ends up returning.
  const double worst = std::max(MaxOf(r.log_kappa_dec), MaxOf(r.log_kappa_enc)) - s.log_kappa;
  s.last_worst = worst;
  const double obj = MaxOf(r.log_err);
  if (!r.singular && worst <= 0 && obj < s.best_log) {
    s.best_log = obj;
    s.best_x = Eigen::Map<const Eigen::VectorXd>(y, n);
  }
  if (s.settings->progress && !s.error &&
      std::chrono::duration<double>(Clock::now() - s.last_progress).count() >=
          s.settings->progress_interval_s) {
    s.last_progress = Clock::now();
    try {
      s.settings->progress(
          OptimizeProgress{s.evaluations, std::exp(s.best_log), std::exp(worst), s.Elapsed()});
    } catch (...) {
      s.error = std::current_exception();
      throw nlopt::forced_stop();
    }
  }
}

}  // namespace

SearchResult Search(const Evaluator& ev, const Eigen::VectorXd& x0,
                    const SearchSettings& settings) {
  const int n = ev.size(), N = ev.N();
  SearchState s;
  s.ev = &ev;
  s.settings = &settings;
  s.log_kappa = std::log(settings.kappa_bound);
  s.log_kappa_search = s.log_kappa + std::log1p(-settings.slack);
  s.start = s.last_progress = Clock::now();
  SearchResult out;
  out.stopped_by = "converged";

  // One local search: NLopt runs restarted from the best point while they still gain (a fresh
  // run resets MMA's asymptotes / the augmented Lagrangian's penalty). Returns false when a
  // budget ran out.
  auto local = [&](Eigen::VectorXd x) {
    double previous = kInf;
    for (int round = 0; round < 20; ++round) {
      const Evaluator::Result r0 = ev.Evaluate(x.data(), settings.norm, false);
      const double t0 = std::min(MaxOf(r0.log_err), 5.0);
      std::vector<double> y(x.data(), x.data() + n), lb(n + 1, -settings.box),
          ub(n + 1, settings.box);
      y.push_back(t0);
      lb[n] = t0 - 60;  // err can fall by e^60 at most: far beyond float64 anyway
      ub[n] = t0 + 10;
      for (int k = 0; k < n; ++k) y[k] = std::clamp(y[k], lb[k], ub[k]);
      nlopt::opt o(ToNlopt(settings.algorithm), n + 1);
      o.set_lower_bounds(lb);
      o.set_upper_bounds(ub);
      o.set_min_objective(Objective, nullptr);
      o.add_inequality_mconstraint(Constraints, &s, std::vector<double>(3 * N, 0.0));
      o.set_xtol_rel(1e-10);
      o.set_ftol_abs(1e-7);
      if (settings.algorithm == OptimizerAlgorithm::kAuglagLbfgs) {
        nlopt::opt inner(nlopt::LD_LBFGS, n + 1);
        inner.set_xtol_rel(1e-10);
        inner.set_ftol_abs(1e-9);
        inner.set_vector_storage(unsigned(EffectiveLbfgsMemory(settings.lbfgs_memory, n + 1)));
        o.set_local_optimizer(inner);
      }
      double f = 0;
      ++out.rounds;
      try {
        o.optimize(y, f);
      } catch (const nlopt::forced_stop&) {
      } catch (const nlopt::roundoff_limited&) {
      } catch (const std::runtime_error&) {
        // NLOPT_FAILURE (e.g. a non-finite probe): keep the best point found so far.
      }
      if (s.error) std::rethrow_exception(s.error);
      if (s.out_of_evaluations || s.out_of_time) return false;
      if (s.best_x.size() == 0 || !(s.best_log < previous - 1e-4)) break;
      previous = s.best_log;
      x = s.best_x;
    }
    return true;
  };

  // Basin hopping: the landscape has many local optima (docs/optimizer.md §6); perturb the best
  // point with seeded noise of cycling size and search again until a budget runs out.
  bool budget_left = local(x0);
  std::mt19937_64 rng(settings.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double amplitudes[] = {0.003, 0.01, 0.03};
  for (int hop = 0; budget_left && hop < settings.max_hops; ++hop) {
    Eigen::VectorXd x = s.best_x.size() ? s.best_x : x0;
    const double scale = settings.hop_scale * amplitudes[hop % 3] * x.norm() / std::sqrt(double(n));
    for (int k = 0; k < n; ++k) x(k) += scale * normal(rng);
    ++out.hops;
    budget_left = local(x);
  }
  if (!budget_left)
    out.stopped_by = s.out_of_evaluations ? "max_evaluations" : "time_limit";
  else if (out.hops > 0)
    out.stopped_by = "max_hops";
  out.feasible = s.best_x.size() > 0;
  out.x = out.feasible ? s.best_x : x0;
  out.objective = out.feasible ? std::exp(s.best_log) : kInf;
  out.evaluations = s.evaluations;
  out.elapsed_s = s.Elapsed();
  return out;
}

void ValidateOptions(const OptimizeOptions& o) {
  std::ostringstream m;
  m << "optimizer options: ";
  if (o.N < 2)
    m << "N = " << o.N << ", expected N >= 2";
  else if (o.c < 1)
    m << "c = " << o.c << ", expected c >= 1";
  else if (!WithinDesignLimits(o.N, o.c))
    m << "N = " << o.N << ", c = " << o.c << " exceed the design limits (N, c <= " << kMaxN
      << ", at most " << kMaxMatrixEntries << " matrix entries), checked before allocating";
  else if (!(o.kappa_max >= 1) || !std::isfinite(o.kappa_max))
    m << "kappa_max = " << o.kappa_max << ", expected a finite value >= 1 (a condition number)";
  else if (!(o.time_limit_s > 0) || !std::isfinite(o.time_limit_s))
    m << "time_limit_s = " << o.time_limit_s << ", expected a finite value > 0";
  else if (o.max_evaluations < 1)
    m << "max_evaluations = " << o.max_evaluations << ", expected >= 1";
  else if (o.max_hops < 0)
    m << "max_hops = " << o.max_hops << ", expected >= 0";
  else if (!(o.perturbation >= 0) || !std::isfinite(o.perturbation))
    m << "perturbation = " << o.perturbation << ", expected a finite value >= 0";
  else if (!(o.continuation_from >= 0 ||
             o.continuation_from == OptimizeOptions::kContinuationAuto) ||
           !std::isfinite(o.continuation_from))
    m << "continuation_from = " << o.continuation_from
      << ", expected a finite value >= 0 (0: off) or kContinuationAuto (-1)";
  else if (!(o.continuation_factor > 1) || !std::isfinite(o.continuation_factor))
    m << "continuation_factor = " << o.continuation_factor << ", expected a finite value > 1";
  else if (!(o.search_slack >= 0 && o.search_slack <= 0.5))
    m << "search_slack = " << o.search_slack << ", expected a value in [0, 0.5]";
  else if (o.lbfgs_memory < 0 && o.lbfgs_memory != OptimizeOptions::kLbfgsMemoryAuto)
    m << "lbfgs_memory = " << o.lbfgs_memory
      << ", expected >= 0 (0: NLopt's heuristic) or kLbfgsMemoryAuto (-1)";
  else if (!(o.progress_interval_s >= 0))
    m << "progress_interval_s = " << o.progress_interval_s << ", expected >= 0";
  else
    return;
  throw InvalidArgument(m.str());
}

int EffectiveLbfgsMemory(int requested, int variables) {
  if (requested != OptimizeOptions::kLbfgsMemoryAuto) return requested;
  return std::clamp(600000 / std::max(variables, 1), 10, 100);
}

double EffectiveContinuationFrom(const OptimizeOptions& o) {
  if (o.continuation_from != OptimizeOptions::kContinuationAuto) return o.continuation_from;
  return o.c <= 2 * o.N ? 100.0 : 0.0;
}

namespace {

// The eps point with the smallest max(kappa_dec, kappa_enc): the start when no eps meets the
// budget (the search then has to find feasibility itself).
double LeastKappaEps(int N, int c) {
  const Evaluator ev(N, c, Parametrisation::kShiftInvariant);
  double best_eps = 1, best = kInf;
  for (int k = -64; k <= 4; ++k) {
    const double eps = std::pow(10.0, k / 8.0);
    const Eigen::VectorXd x = EpsBaseSequence(N, c, eps);
    const Figures f = ev.Analyse(x.data());
    if (std::max(f.kappa_dec, f.kappa_enc) < best) {
      best = std::max(f.kappa_dec, f.kappa_enc);
      best_eps = eps;
    }
  }
  return best_eps;
}

double MaxRowNorm(const Eigen::VectorXd& x, int c) {
  double m = 0;
  for (int r = 0; r < x.size() / c; ++r) m = std::max(m, x.segment(r * c, c).norm());
  return m;
}

}  // namespace

Float64Run RunFloat64(const OptimizeOptions& options, const Evaluator& ev) {
  ValidateOptions(options);
  const int N = options.N, c = options.c;
  Float64Run run;
  try {
    run.start_eps = BestEpsWithinKappa(N, c, options.kappa_max, /*bound_kappa_enc=*/true).eps;
  } catch (const InvalidArgument&) {
    if (c <= N) throw;  // exact construction whose kappa exceeds the budget: nothing to search
    run.start_eps = LeastKappaEps(N, c);
    run.start_feasible = false;
  }
  run.start_x = EpsPoint(N, c, run.start_eps, options.per_rank_encoders);
  run.start_figures = ev.Analyse(run.start_x.data());
  run.x = run.start_x;
  run.figures = run.start_figures;
  if (run.start_feasible && run.start_figures.err_op < 1e-13) {  // exact already (c <= N)
    run.skipped = true;
    run.search.stopped_by = "start point exact";
    run.search.x = run.start_x;
    run.search.feasible = true;
    return run;
  }

  // Seeded perturbation (seed 0: none) so different seeds explore different local optima.
  Eigen::VectorXd x0 = run.start_x;
  if (options.seed != 0 && options.perturbation > 0) {
    std::mt19937_64 rng(options.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    const double scale = options.perturbation * run.start_x.norm() / std::sqrt(double(x0.size()));
    for (int k = 0; k < x0.size(); ++k) x0(k) += scale * normal(rng);
  }

  SearchSettings settings;
  settings.norm = options.objective == Objective::kRms ? Evaluator::ErrorNorm::kFrobenius
                                                       : Evaluator::ErrorNorm::kSchatten;
  settings.algorithm = options.algorithm;
  // Progress counts evaluations and time over the whole run, across stages and warm starts:
  // each Search reports its own counts, offset by what the run had used before it started.
  int progress_base = 0;
  const auto run_started = std::chrono::steady_clock::now();
  if (options.progress)
    settings.progress = [&progress_base, &run_started,
                         user = options.progress](const OptimizeProgress& p) {
      OptimizeProgress q = p;
      q.evaluations += progress_base;
      q.elapsed_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - run_started).count();
      user(q);
    };
  settings.progress_interval_s = options.progress_interval_s;
  settings.seed = options.seed;
  settings.max_hops = options.max_hops;
  settings.slack = options.search_slack;
  settings.lbfgs_memory = options.lbfgs_memory;

  // Rescaled continuation in kappa (docs/optimizer.md §6): budgets kappa_max / f^s >=
  // continuation_from (f = continuation_factor), smallest first, then kappa_max; each stage
  // starts from the previous stage's design rescaled to its budget (optimizer_transfer.h). The
  // time and evaluation budgets are split evenly between the stages.
  std::vector<double> stages;
  const double cfac = options.continuation_factor;
  const double cfrom = EffectiveContinuationFrom(options);
  if (cfrom > 0)
    for (double k = options.kappa_max / cfac; k >= cfrom * (1 - 1e-9); k /= cfac)
      stages.insert(stages.begin(), k);
  stages.push_back(options.kappa_max);
  const int S = int(stages.size());
  // Share of the budgets used up by the end of stage st: the first stage gets half, the others
  // split the rest. The first stage is the hard one (from the eps point, where the gain is
  // made); later stages refine a transferred design (N = 16, c = 32, kappa_max = 1e4: ratio
  // 0.45 with half, 0.82 with a third, docs/optimizer.md §9).
  auto stage_end = [S](int st) { return S == 1 ? 1.0 : 0.5 + 0.5 * st / (S - 1); };
  const auto started = std::chrono::steady_clock::now();
  int evaluations_used = 0;
  Eigen::VectorXd current;  // best point of the previous stages (empty: none feasible yet)
  double first_eps = 0;     // eps of the first stage's start
  double current_eps = 0;   // eps of the eps point the stage that found `current` started from
  double previous_log_err = 0;
  SearchResult total;
  for (int st = 0; st < S; ++st) {
    const bool last = st == S - 1;
    settings.kappa_bound = stages[st] * (1 - 1e-5);  // margin for the mp50 re-check
    const double used_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    settings.time_limit_s = last ? std::max(1e-3, options.time_limit_s - used_s)
                                 : std::max(1e-3, options.time_limit_s * stage_end(st) - used_s);
    settings.max_evaluations =
        last ? std::max(1, options.max_evaluations - evaluations_used)
             : std::max(1, int(options.max_evaluations * stage_end(st)) - evaluations_used);
    SearchResult r;
    double stage_eps = run.start_eps;
    if (!last) {
      try {
        stage_eps = BestEpsWithinKappa(N, c, stages[st], /*bound_kappa_enc=*/true).eps;
      } catch (const InvalidArgument&) {
        stage_eps = LeastKappaEps(N, c);
      }
    }
    // Rescaled continuation: carry the previous stage's design to this budget, unless that
    // does not beat the eps point for this budget (then start afresh from that point).
    bool fresh = current.size() == 0;
    Transfer t;
    if (!fresh) {
      t = RescaleToBudget(ev, options.per_rank_encoders, current, current_eps, stage_eps,
                          settings.kappa_bound, settings.norm);
      const Evaluator::Result e =
          ev.Evaluate(EpsPoint(N, c, stage_eps, options.per_rank_encoders).data(), settings.norm,
                      false);
      ++t.evaluations;
      // (The eps point sits on the budget's boundary; its kappa may exceed the search's bound,
      // which keeps a 1e-5 margin, by a hair: compare errors regardless.)
      const double eps_log_err = e.singular ? kInf : MaxOf(e.log_err);
      fresh = !(t.log_err < eps_log_err);
      std::ostringstream how;
      how << "kappa " << stages[st] << ": " << t.how << ", err " << std::exp(t.log_err)
          << " (previous stage " << std::exp(previous_log_err) << ", eps point "
          << std::exp(eps_log_err) << ")" << (fresh ? "; started from the eps point instead" : "");
      total.stage_starts.push_back(how.str());
    }
    if (fresh) {
      // Fresh start: the eps point for this stage's budget (the run's own start on the last).
      Eigen::VectorXd xs = x0;
      if (!last) {
        xs = EpsPoint(N, c, stage_eps, options.per_rank_encoders);
        if (options.seed != 0) xs += x0 - run.start_x;  // same seeded perturbation
      }
      settings.box = 2 * xs.cwiseAbs().maxCoeff();
      if (options.per_rank_encoders) {
        // Warm start: a per-rank evaluation costs ~N times a shift-invariant one, so spend the
        // first sixth of the stage's time (a third of its evaluations) on the shift-invariant
        // problem (seeded from the same start) and continue per rank from its best point. A
        // sixth: the shift-invariant search stalls early, per rank is short of evaluations for
        // large N (docs/optimizer.md §6, §9).
        const Evaluator shift(N, c, Parametrisation::kShiftInvariant);
        const Eigen::VectorXd base0 = EpsBaseSequence(N, c, stage_eps);
        SearchSettings warm = settings;
        warm.time_limit_s = settings.time_limit_s / 6;
        warm.max_evaluations = std::max(1, settings.max_evaluations / 3);
        warm.box = 2 * base0.cwiseAbs().maxCoeff();
        progress_base = evaluations_used + t.evaluations;
        const SearchResult w = Search(shift, base0, warm);
        if (w.feasible) xs = ShiftInvariantToPerRank(N, c, w.x);
        SearchSettings rest = settings;
        rest.time_limit_s = std::max(1e-3, settings.time_limit_s - w.elapsed_s);
        rest.max_evaluations = std::max(1, settings.max_evaluations - w.evaluations);
        rest.box = 2 * xs.cwiseAbs().maxCoeff();
        progress_base += w.evaluations;
        r = Search(ev, xs, rest);
        r.evaluations += w.evaluations;
        r.elapsed_s += w.elapsed_s;
        r.rounds += w.rounds;
        r.hops += w.hops;
      } else {
        progress_base = evaluations_used + t.evaluations;
        r = Search(ev, xs, settings);
      }
      current_eps = stage_eps;
      if (st == 0) first_eps = stage_eps;
      r.evaluations += t.evaluations;
    } else {
      settings.box = 2 * t.x.cwiseAbs().maxCoeff();
      progress_base = evaluations_used + t.evaluations;
      // Hops scaled with eps: the design's departure from the eps construction shrinks with
      // eps (§6), and hops sized for the first stage would throw the search out of its basin.
      SearchSettings hopping = settings;
      hopping.hop_scale = current_eps * t.scale / first_eps;
      r = Search(ev, t.x, hopping);
      r.evaluations += t.evaluations;
      current_eps *= t.scale;  // the rescaled point departs from X_eps(current_eps s)
    }
    evaluations_used += r.evaluations;
    total.evaluations += r.evaluations;
    total.elapsed_s += r.elapsed_s;
    total.rounds += r.rounds;
    total.hops += r.hops;
    if (r.feasible) {
      current = r.x;
      previous_log_err = std::log(r.objective);
    }
    if (last) {
      total.x = r.x;
      total.feasible = r.feasible;
      total.objective = r.objective;
      total.stopped_by = r.stopped_by;
    }
  }
  total.stages = S;
  run.search = total;

  // Gauge: every figure is invariant under x -> s x; scale by a power of two (bit-exact
  // figures) so the largest row of C (or E) is within sqrt(2) of the start's.
  Eigen::VectorXd x = run.search.x;
  const double ratio = MaxRowNorm(run.start_x, c) / MaxRowNorm(x, c);
  x *= std::exp2(std::round(std::log2(ratio)));
  run.x = x;
  run.figures = ev.Analyse(x.data());
  return run;
}

}  // namespace cerar::design::opt
