// One float64 search of the optimiser (docs/optimizer.md §6): NLopt on the epigraph form,
// restarted while it gains, then basin hopping until a budget runs out.
#include "design/optimizer_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <nlopt.hpp>
#include <random>


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

// Constraints, 3N of them: log err_j - t, log kappa_dec_j - log kappa, log kappa_enc_i - log kappa;
// N (the first) when no kappa is bounded.
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
  const bool kappas = s.settings->bounds_kappa();
  s.ev->EvaluateInto(y, s.settings->norm, r, grad, n1, kappas);
  ++s.evaluations;
  const double t = y[n];
  for (int j = 0; j < N; ++j) {
    result[j] = r.log_err[j] - t;
    if (!kappas) continue;
    result[N + j] = r.log_kappa_dec[j] - s.log_kappa_search;
    result[2 * N + j] = r.log_kappa_enc[j] - s.log_kappa_search;
  }
  if (grad)
    for (int i = 0; i < int(m); ++i) grad[std::size_t(i) * n1 + n] = i < N ? -1.0 : 0.0;
  // Track the best point meeting the kappa bound, whatever NLopt ends up returning.
  const double worst =
      kappas ? std::max(MaxOf(r.log_kappa_dec), MaxOf(r.log_kappa_enc)) - s.log_kappa : -kInf;
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
  const bool kappas = settings.bounds_kappa();
  SearchState s;
  s.ev = &ev;
  s.settings = &settings;
  s.log_kappa = kappas ? std::log(settings.kappa_bound) : kInf;
  s.log_kappa_search = kappas ? s.log_kappa + std::log1p(-settings.slack) : kInf;
  s.start = s.last_progress = Clock::now();
  SearchResult out;
  out.stopped_by = "converged";

  // One local search: NLopt runs restarted from the best point while they still gain (a fresh
  // run resets MMA's asymptotes / the augmented Lagrangian's penalty). Returns false when a
  // budget ran out.
  auto local = [&](Eigen::VectorXd x) {
    double previous = kInf;
    for (int round = 0; round < 20; ++round) {
      const Evaluator::Result r0 = ev.Evaluate(x.data(), settings.norm, false, kappas);
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
      o.add_inequality_mconstraint(Constraints, &s,
                                   std::vector<double>((kappas ? 3 : 1) * N, 0.0));
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

int EffectiveLbfgsMemory(int requested, int variables) {
  if (requested != OptimizeOptions::kLbfgsMemoryAuto) return requested;
  return std::clamp(600000 / std::max(variables, 1), 10, 100);
}

void SearchResult::Add(const SearchResult& later) {
  evaluations += later.evaluations;
  rounds += later.rounds;
  hops += later.hops;
  elapsed_s += later.elapsed_s;
}

}  // namespace cerar::design::opt
