#pragma once
// The precision ladder (docs/error-model.md, "Certified digits"): run the same derivation or
// analysis at 50, 100, 200, ... significant digits until two successive precisions agree on
// every figure; the digits in which they agree are the figures' certified digits.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine.h"

namespace cerar::design::detail {

// The ladder stops once every figure agrees to this many significant digits.
inline constexpr int kTargetDigits = 10;
// A float64 figure carries 15.95 significant digits: certified digits are capped at 15.
inline constexpr int kMaxCertifiedDigits = 15;
// Error figures below this count as zero: their agreement is measured against it (an exact
// design's err_op is rounding noise, 1e-50 in 50 digits and 1e-100 in 100).
inline constexpr double kZeroError = 1e-30;

// Working precisions tried for `max_digits`: 50, 100, 200, ... doubling, the last one
// max_digits itself (e.g. 300: 50, 100, 200, 300). Throws InvalidArgument outside
// [50, kMaxDigits].
std::vector<int> LadderRungs(int max_digits);
inline constexpr int kMaxDigits = 10000;

// Per figure name (err_op, err_rms, kappa_dec, kappa_enc): the smallest AgreeingDigits
// (toolkit.h; +inf agrees only with +inf) over the
// headline value and every per-rank value of two analyses of the same matrices.
std::map<std::string, int> Agreement(const Figures& a, const Figures& b);

// A derivation certified by the ladder, and the precision that certified it.
struct Certified {
  Derivation derivation;  // at the higher precision; stored/exact figures carry certified_digits
  std::string certified_against;  // the lower precision ("" when max_digits allows one rung)
};

// Runs derive(digits) up the ladder until the stored and exact figures of two successive rungs
// agree to kTargetDigits (and no condition number is +inf below the top rung). With one rung
// (max_digits = 50) the result is returned uncertified. Throws NumericalError naming `what`:
// "singular" when every rung (two at least) finds a Gram matrix rank-deficient, else "too
// ill-conditioned for P digits (kappa ≈ ...) ...; raise the digit limit to 2P (cerar
// --max-digits, Python max_digits)".
Certified DeriveCertified(const std::function<Derivation(int digits)>& derive, int max_digits,
                          const std::string& what);

// The same for an analysis of fixed matrices.
Figures AnalyseCertified(const std::function<Figures(int digits)>& analyse, int max_digits,
                         const std::string& what);

}  // namespace cerar::design::detail
