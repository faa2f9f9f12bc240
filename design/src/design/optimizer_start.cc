// The optimiser's start points and the table's baseline: the eps construction at the eps with
// the smallest err_rms whose condition numbers meet the budget, or with the smallest predicted
// error in a target arithmetic (docs/optimizer.md §5).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "cerar/design/optimizer.h"
#include "cerar/errors.h"
#include "design/optimizer_objective.h"

namespace cerar::design {
namespace {

// Relative margin below kappa_max: float64 kappa is accurate to ~u kappa^2 (1e-8 at 1e4), so
// the high-precision re-analysis of a point found here still meets the budget.
constexpr double kKappaMargin = 1e-6;

// The scan of both searches: 8 points per decade over eps in [1e-8, 3].
constexpr int kScanFrom = -64, kScanTo = 4, kScanPerDecade = 8;

struct Probe {
  double eps = 0;
  Figures figures;
  bool feasible = false;
  double kappa() const { return std::max(figures.kappa_dec, figures.kappa_enc); }
};

void CheckArguments(int N, int c, double kappa_max, bool infinite_ok) {
  if (N < 2 || c < 1)
    throw InvalidArgument("eps start point: N = " + std::to_string(N) +
                          ", c = " + std::to_string(c) + "; expected N >= 2 and c >= 1");
  if (!(kappa_max >= 1) || (!infinite_ok && !std::isfinite(kappa_max))) {
    std::ostringstream m;
    m << "eps start point: kappa_max = " << kappa_max << ", expected a finite value >= 1";
    throw InvalidArgument(m.str());
  }
}

}  // namespace

std::string EpsAtKappa::Describe(int N, int c, double kappa_max, bool bound_kappa_enc) const {
  std::ostringstream m;
  m << "no eps in [1e-8, 3] gives kappa_dec" << (bound_kappa_enc ? " and kappa_enc" : "")
    << " <= kappa_max = " << kappa_max << " for N = " << N << ", c = " << c
    << " (smallest reached: kappa_dec " << figures.kappa_dec << ", kappa_enc "
    << figures.kappa_enc << ")";
  if (figures.kappa_dec > 1e300)
    m << "; some rank's windows are singular at every eps (a cos/sin pair split by c)";
  return m.str();
}

EpsAtKappa BestEpsWithinKappa(int N, int c, double kappa_max, bool bound_kappa_enc) {
  CheckArguments(N, c, kappa_max, false);
  const opt::Evaluator ev(N, c, opt::Parametrisation::kShiftInvariant);
  const double bound = kappa_max * (1 - kKappaMargin);
  auto probe = [&](double eps) {
    const Eigen::VectorXd x = opt::EpsBaseSequence(N, c, eps);
    Probe p{eps, ev.Analyse(x.data()), false};
    p.feasible = p.figures.kappa_dec <= bound &&
                 (!bound_kappa_enc || p.figures.kappa_enc <= bound) &&
                 std::isfinite(p.figures.err_rms);
    return p;
  };
  auto result = [](const Probe& p) { return EpsAtKappa{p.feasible, p.eps, p.figures}; };

  if (c <= N) return result(probe(1e-3));  // r* = 0: eps does not enter; exact
  // Log-spaced scan; err_rms grows with eps and kappa shrinks, so the best feasible point sits
  // at the feasibility boundary, refined by bisection in log eps.
  std::vector<Probe> grid;
  for (int k = kScanFrom; k <= kScanTo; ++k)
    grid.push_back(probe(std::pow(10.0, double(k) / kScanPerDecade)));
  int best = -1, least_kappa = 0;
  for (int k = 0; k < int(grid.size()); ++k) {
    if (grid[k].kappa() < grid[least_kappa].kappa()) least_kappa = k;
    if (grid[k].feasible && (best < 0 || grid[k].figures.err_rms < grid[best].figures.err_rms))
      best = k;
  }
  if (best < 0) return result(grid[least_kappa]);
  Probe chosen = grid[best];
  if (best > 0 && !grid[best - 1].feasible) {
    double lo = std::log(grid[best - 1].eps), hi = std::log(grid[best].eps);
    Probe hi_probe = grid[best];
    for (int it = 0; it < 60 && hi - lo > 1e-12; ++it) {
      const double mid = 0.5 * (lo + hi);
      Probe p = probe(std::exp(mid));
      if (p.feasible) {
        hi = mid;
        hi_probe = p;
      } else {
        lo = mid;
      }
    }
    if (hi_probe.figures.err_rms < chosen.figures.err_rms) chosen = hi_probe;
  }
  return result(chosen);
}

EpsAtKappa BestEpsForTarget(int N, int c, Arithmetic target, double kappa_max) {
  CheckArguments(N, c, kappa_max, true);
  const opt::Evaluator ev(N, c, opt::Parametrisation::kShiftInvariant, target);
  const double bound = kappa_max * (1 - kKappaMargin);
  const bool bounded = std::isfinite(kappa_max);
  // Predicted error (the objective, +inf where singular or out of budget) of the eps point.
  auto predicted = [&](double log_eps, Probe* p) {
    const Eigen::VectorXd x = opt::EpsBaseSequence(N, c, std::exp(log_eps));
    const auto r = ev.Evaluate(x.data(), opt::Evaluator::ErrorNorm::kPredicted, false, bounded);
    p->eps = std::exp(log_eps);
    p->figures = ev.Analyse(x.data());
    p->figures.predicted_error[ToString(target)] = std::exp(opt::MaxOf(r.log_err));
    p->feasible = !r.singular && (!bounded || p->kappa() <= bound);
    return p->feasible ? opt::MaxOf(r.log_err) : INFINITY;
  };
  Probe best, least_kappa, p;
  double best_value = INFINITY, best_log = 0;
  for (int k = kScanFrom; k <= kScanTo; ++k) {
    const double log_eps = std::log(10.0) * k / kScanPerDecade;
    const double v = predicted(log_eps, &p);
    if (k == kScanFrom || p.kappa() < least_kappa.kappa()) least_kappa = p;
    if (v < best_value) {
      best_value = v;
      best_log = log_eps;
      best = p;
    }
    if (c <= N) break;  // r* = 0: eps does not enter
  }
  if (!(best_value < INFINITY)) return EpsAtKappa{false, least_kappa.eps, least_kappa.figures};
  // Golden section on the grid cell either side (the predicted error is unimodal in log eps:
  // approximation falls with eps, rounding grows like eps^-r*).
  if (c > N) {
    const double phi = (std::sqrt(5.0) - 1) / 2, step = std::log(10.0) / kScanPerDecade;
    double a = best_log - step, b = best_log + step;
    double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
    Probe p1, p2;
    double f1 = predicted(x1, &p1), f2 = predicted(x2, &p2);
    for (int it = 0; it < 30; ++it) {
      if (f1 <= f2) {
        b = x2, x2 = x1, f2 = f1, p2 = p1;
        x1 = b - phi * (b - a);
        f1 = predicted(x1, &p1);
      } else {
        a = x1, x1 = x2, f1 = f2, p1 = p2;
        x2 = a + phi * (b - a);
        f2 = predicted(x2, &p2);
      }
    }
    if (f1 < best_value) best_value = f1, best = p1;
    if (f2 < best_value) best_value = f2, best = p2;
  }
  return EpsAtKappa{true, best.eps, best.figures};
}

}  // namespace cerar::design
