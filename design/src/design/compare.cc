// Recorded vs re-derived figures, and Validate (see toolkit.h for the rules).
#include <algorithm>
#include <cmath>
#include <limits>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "derive.h"
#include "ladder.h"

namespace cerar::design {
namespace {

// Uncertified figures (float64, or files older than the ladder) must agree to 6 digits, with
// errors below 1e-6 measured against 1e-6: an exact design's float64 err_op is rounding noise
// (~1e-16) that a high-precision re-derivation puts at ~1e-50.
constexpr int kUncertifiedDigits = 6;
constexpr double kUncertifiedZero = 1e-6;
// An error figure computed in float64 is D_j W_ij - I rounded, so it is only accurate to about
// kappa_dec u absolute: the writer keeps float64 figures while that is within 1 % of err_rms
// (make.cc), and a figure of 1.6e-6 at kappa_dec 1.4e6 (1.6e-10 of rounding) failed the 6 digits
// above. Such figures may differ by this many times kappa_dec u besides.
constexpr double kFloat64ErrorSlack = 10;

struct Rule {
  int required;
  double zero;
  double slack = 0;  // absolute, beside the digits
};

Rule RuleFor(const Figures& recorded, const Figures& derived, const std::string& figure) {
  const auto r = recorded.certified_digits.find(figure);
  const auto d = derived.certified_digits.find(figure);
  const bool error = figure == "err_op" || figure == "err_rms";
  if (r == recorded.certified_digits.end() || d == derived.certified_digits.end()) {
    // The re-derived kappa_dec bounds the rounding of a float64 record's error figures (a
    // falsified recorded kappa_dec fails its own check).
    const bool float64 = recorded.precision == "float64" && std::isfinite(derived.kappa_dec);
    const double slack =
        error && float64
            ? kFloat64ErrorSlack * derived.kappa_dec * UnitRoundoff(Arithmetic::kFloat64)
            : 0.0;
    return {kUncertifiedDigits, error ? kUncertifiedZero : 0.0, slack};
  }
  return {std::min(r->second, d->second), error ? detail::kZeroError : 0.0};
}

// Agree when both are certified to `required` digits: |a - b| <= 2 10^-required scale (+ slack).
FigureCheck Check(const std::string& name, double recorded, double derived, Rule rule) {
  FigureCheck c{name, recorded, derived, AgreeingDigits(recorded, derived, rule.zero),
                rule.required, false};
  if (recorded == derived) {
    c.agree = true;  // +inf == +inf included
  } else if (std::isfinite(recorded) && std::isfinite(derived)) {
    const double scale = std::max({std::abs(recorded), std::abs(derived), rule.zero});
    c.agree = std::abs(recorded - derived) <=
              2 * std::pow(10.0, -rule.required) * scale + rule.slack;
  }
  return c;
}

// The worst-agreeing rank of a per-rank array (nothing recorded: no check).
void CheckPerRank(const std::string& name, const std::vector<double>& recorded,
                  const std::vector<double>& derived, Rule rule, std::vector<FigureCheck>& out) {
  if (recorded.empty()) return;
  if (recorded.size() != derived.size()) {
    out.push_back({name + " (" + std::to_string(recorded.size()) + " recorded, " +
                       std::to_string(derived.size()) + " re-derived)",
                   std::nan(""), std::nan(""), 0, rule.required, false});
    return;
  }
  std::optional<FigureCheck> worst;
  for (std::size_t k = 0; k < recorded.size(); ++k) {
    FigureCheck c = Check(name + "[" + std::to_string(k) + "]", recorded[k], derived[k], rule);
    if (!worst || (worst->agree && !c.agree) ||
        (worst->agree == c.agree && c.digits < worst->digits)) {
      worst = std::move(c);
    }
  }
  out.push_back(std::move(*worst));
}

// A design's exact construction, rebuilt from its provenance where it names one of the
// toolkit's constructions (and the rebuilt encoders are the stored ones), else its stored
// encoders with unrounded decoders.
detail::Derivation ReDeriveExact(const Design& design, Precision precision, int max_digits) {
  const Provenance& p = design.provenance();
  const bool construction = (p.construction == "eps" || p.construction == "vandermonde") &&
                            p.shift_invariant && p.parameters.contains("eps") &&
                            p.parameters["eps"].is_number();
  if (construction) {
    ConstructionOptions o;
    o.construction = ParseConstruction(p.construction);
    o.N = design.N();
    o.c = design.c();
    o.eps = p.parameters["eps"].get<double>();
    o.precision = precision;
    o.max_digits = max_digits;
    detail::Derivation d = detail::DeriveConstructionIn(o).derivation;
    for (int i = 0; i < design.N(); ++i) {
      // The same construction rounds to the same float64 encoders (a few ulps apart at most if a
      // different working precision rounded a near-tie the other way).
      const MatrixXd& stored = design.encoder(i);
      if ((d.encoders[i] - stored).cwiseAbs().maxCoeff() >
          1e-15 * std::max(1.0, stored.cwiseAbs().maxCoeff())) {
        throw DesignError("exact_figures: the design's encoder E[" + std::to_string(i) +
                          "] is not the " + detail::ConstructionName(o) +
                          " its provenance names, so its exact figures cannot be re-derived");
      }
    }
    return d;
  }
  return detail::DeriveFromEncodersIn(design.N(), design.c(), design.encoders(), precision,
                                      max_digits, p.construction + " design")
      .derivation;
}

}  // namespace

std::vector<FigureCheck> CompareFigures(const Figures& recorded, const Figures& derived,
                                        const std::string& prefix) {
  struct Row {
    const char* name;
    double Figures::*value;
    std::vector<double> Figures::*per_rank;
  };
  static constexpr Row kRows[] = {
      {"err_op", &Figures::err_op, &Figures::err_op_per_rank},
      {"err_rms", &Figures::err_rms, &Figures::err_rms_per_rank},
      {"kappa_dec", &Figures::kappa_dec, &Figures::kappa_dec_per_rank},
      {"kappa_enc", &Figures::kappa_enc, &Figures::kappa_enc_per_rank}};
  std::vector<FigureCheck> out;
  for (const Row& r : kRows) {
    const Rule rule = RuleFor(recorded, derived, r.name);
    out.push_back(Check(prefix + "." + r.name, recorded.*r.value, derived.*r.value, rule));
    CheckPerRank(prefix + "." + r.name + "_per_rank", recorded.*r.per_rank, derived.*r.per_rank,
                 rule, out);
  }
  // The error model is float64 arithmetic on the stored matrices and err_rms: as exact as the
  // err_rms it starts from.
  const Rule model = RuleFor(recorded, derived, "err_rms");
  for (const auto& [arithmetic, value] : recorded.predicted_error) {
    const auto it = derived.predicted_error.find(arithmetic);
    const std::string name = prefix + ".predicted_error[" + arithmetic + "]";
    if (it == derived.predicted_error.end()) {
      out.push_back({name + " (not re-derivable)", value, std::nan(""), 0, model.required, false});
    } else {
      out.push_back(Check(name, value, it->second, model));
    }
  }
  return out;
}

bool Validation::ok() const {
  return std::all_of(checks.begin(), checks.end(), [](const FigureCheck& c) { return c.agree; });
}

Validation Validate(const Design& design, Precision precision, int max_digits) {
  Validation v;
  v.derived = Analyse(design, precision, max_digits);
  if (design.figures()) v.checks = CompareFigures(*design.figures(), v.derived, "figures");
  if (design.exact_figures()) {
    v.derived_exact = ReDeriveExact(design, precision, max_digits).exact;
    for (FigureCheck& c : CompareFigures(*design.exact_figures(), *v.derived_exact,
                                         "exact_figures")) {
      v.checks.push_back(std::move(c));
    }
  }
  return v;
}

}  // namespace cerar::design
