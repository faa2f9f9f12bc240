// Precision-aware tuning of eps (PROTOCOL.md §8) and eps sweeps.
//
// The predicted error is ~ err_rms (falls like eps) combined with rounding (grows like
// eps^-r*): unimodal in log eps. A coarse grid finds the basin robustly (and deterministically,
// no random starts), golden-section search on log10 eps then refines it.
//
// The search runs in float64 unless mp50 is forced: near the optimum of a float32 or bfloat16
// run kappa is far below what float64 resolves, and points where float64 cannot be trusted have
// a large kappa, hence a large rounding term, so they are never the optimum. Only the chosen
// design is built in the requested precision (kAuto: mp50 where its conditioning needs it),
// which keeps tuning N = 32, c = 128 to seconds instead of hours of 50-digit analyses.
#include <cmath>
#include <limits>
#include <optional>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "text.h"

namespace cerar::design {
namespace {

using detail::Num;

constexpr double kLogEpsMin = -8;  // grid [1e-8, 1], 2 points per decade
constexpr double kLogEpsMax = 0;
constexpr int kGridPerDecade = 2;
constexpr int kGoldenIterations = 14;  // bracket of 1 decade -> ~1e-3 decades

struct Evaluation {
  double error = std::numeric_limits<double>::infinity();
  std::optional<Design> design;
};

ConstructionOptions Options(Construction construction, int N, int c, double eps,
                            Precision precision, int max_digits) {
  ConstructionOptions o;
  o.construction = construction;
  o.N = N;
  o.c = c;
  o.eps = eps;
  o.precision = precision;
  o.max_digits = max_digits;
  return o;
}

Evaluation Evaluate(Construction construction, int N, int c, Arithmetic arithmetic,
                    Precision precision, int max_digits, double log_eps) {
  const ConstructionOptions o =
      Options(construction, N, c, std::pow(10.0, log_eps), precision, max_digits);
  Evaluation e;
  try {
    e.design = MakeConstruction(o);
    e.error = PredictedError(*e.design->figures(), N, c, arithmetic);
  } catch (const NumericalError&) {
    // eps so small that the decoder is singular or float64 cannot be trusted: not a candidate
  }
  if (!std::isfinite(e.error)) e.error = std::numeric_limits<double>::infinity();
  return e;
}

}  // namespace

TuneResult TuneEps(Construction construction, int N, int c, Arithmetic arithmetic,
                   Precision final_precision, int max_digits) {
  const Precision precision =
      final_precision == Precision::kMp50 ? Precision::kMp50 : Precision::kFloat64;
  const int points = int((kLogEpsMax - kLogEpsMin) * kGridPerDecade) + 1;
  double best_log = kLogEpsMin;
  Evaluation best;
  for (int k = 0; k < points; ++k) {
    const double log_eps = kLogEpsMin + double(k) / kGridPerDecade;
    Evaluation e = Evaluate(construction, N, c, arithmetic, precision, max_digits, log_eps);
    if (e.error < best.error) {  // strict: ties keep the smaller eps, deterministically
      best = std::move(e);
      best_log = log_eps;
    }
  }
  if (!best.design) {
    throw NumericalError("TuneEps: " + ToString(construction) + " construction N = " +
                         std::to_string(N) + ", c = " + std::to_string(c) +
                         ": no eps in [1e-8, 1] gives a usable design");
  }
  // Golden section on [best - 1/2, best + 1/2] decades (clamped to the grid range).
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = std::max(kLogEpsMin, best_log - 1.0 / kGridPerDecade);
  double b = std::min(kLogEpsMax, best_log + 1.0 / kGridPerDecade);
  double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
  Evaluation f1 = Evaluate(construction, N, c, arithmetic, precision, max_digits, x1);
  Evaluation f2 = Evaluate(construction, N, c, arithmetic, precision, max_digits, x2);
  for (int it = 0; it < kGoldenIterations; ++it) {
    if (f1.error <= f2.error) {
      b = x2;
      x2 = x1;
      f2 = std::move(f1);
      x1 = b - phi * (b - a);
      f1 = Evaluate(construction, N, c, arithmetic, precision, max_digits, x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = std::move(f2);
      x2 = a + phi * (b - a);
      f2 = Evaluate(construction, N, c, arithmetic, precision, max_digits, x2);
    }
  }
  for (auto* e : {&f1, &f2}) {
    if (e->design && e->error < best.error) {
      best = std::move(*e);
      best_log = (e == &f1) ? x1 : x2;
    }
  }
  if (final_precision != precision) {
    // Built again in the requested precision; a failure there (singular, or beyond max_digits)
    // is reported as it is, naming the eps the float64 search chose.
    const ConstructionOptions o = Options(construction, N, c, std::pow(10.0, best_log),
                                          final_precision, max_digits);
    try {
      return TuneResult{o.eps, MakeConstruction(o)};
    } catch (const NumericalError& e) {
      throw NumericalError("TuneEps: eps = " + Num(o.eps) + " chosen in float64: " + e.what());
    }
  }
  return TuneResult{std::pow(10.0, best_log), std::move(*best.design)};
}

std::vector<SweepPoint> Sweep(Construction construction, int N, int c, double eps_from,
                              double eps_to, int points, Precision precision, int max_digits) {
  if (!(eps_from > 0) || !(eps_to > 0) || !std::isfinite(eps_from) || !std::isfinite(eps_to)) {
    throw InvalidArgument("Sweep: eps range [" + Num(eps_from) + ", " + Num(eps_to) +
                          "] must be finite and > 0 (log grid)");
  }
  if (points < 1 || points > 10000) {  // as `cerar sweep --points`; a billion once meant bad_alloc
    throw InvalidArgument("Sweep: points = " + std::to_string(points) + ", expected 1 ... 10000");
  }
  std::vector<SweepPoint> out;
  out.reserve(points);
  const double l0 = std::log10(eps_from), l1 = std::log10(eps_to);
  for (int k = 0; k < points; ++k) {
    ConstructionOptions o = Options(
        construction, N, c,
        points == 1 ? eps_from : std::pow(10.0, l0 + (l1 - l0) * k / (points - 1)), precision,
        max_digits);
    if (k == points - 1 && points > 1) o.eps = eps_to;  // exact end point
    if (k == 0) o.eps = eps_from;
    out.push_back({o.eps, *MakeConstruction(o).figures()});
  }
  return out;
}

}  // namespace cerar::design
