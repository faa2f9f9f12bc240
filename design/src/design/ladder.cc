// The precision ladder (see ladder.h and docs/error-model.md).
#include "ladder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "cerar/errors.h"
#include "text.h"

namespace cerar::design::detail {
namespace {

bool IsErrorFigure(const std::string& name) { return name == "err_op" || name == "err_rms"; }

struct FigureRef {
  const char* name;
  double Figures::*value;
  std::vector<double> Figures::*per_rank;
};
constexpr FigureRef kFigures[] = {
    {"err_op", &Figures::err_op, &Figures::err_op_per_rank},
    {"err_rms", &Figures::err_rms, &Figures::err_rms_per_rank},
    {"kappa_dec", &Figures::kappa_dec, &Figures::kappa_dec_per_rank},
    {"kappa_enc", &Figures::kappa_enc, &Figures::kappa_enc_per_rank}};

bool HasInfiniteKappa(const Figures& f) {
  auto inf = [](double v) { return std::isinf(v); };
  return inf(f.kappa_dec) || inf(f.kappa_enc) ||
         std::any_of(f.kappa_dec_per_rank.begin(), f.kappa_dec_per_rank.end(), inf) ||
         std::any_of(f.kappa_enc_per_rank.begin(), f.kappa_enc_per_rank.end(), inf);
}

// The figure that agrees least between two analyses, for messages.
struct Shortfall {
  std::string figure;
  int digits = kMaxCertifiedDigits + 1;
  double lower = 0, upper = 0;
};

// Climbs the rungs with at(digits); figures_of(result) lists the Figures to compare and
// certify. See DeriveCertified for the stopping rule and the messages.
template <class R, class At, class FiguresOf>
R Climb(const At& at, const FiguresOf& figures_of, int max_digits, const std::string& what,
        std::string* certified_against) {
  const std::vector<int> rungs = LadderRungs(max_digits);
  std::optional<R> lower;
  int lower_digits = 0;
  bool only_rank_deficient = true;  // every failed rung: a Gram matrix lost rank
  std::string limit, symptom;       // the last PrecisionLimit's message and symptom
  int limit_digits = 0;             // ... and its precision
  std::string shortfall;            // the last comparison that fell short
  for (std::size_t k = 0; k < rungs.size(); ++k) {
    const int digits = rungs[k];
    const bool top = k + 1 == rungs.size();
    std::optional<R> upper;
    try {
      upper = at(digits);
    } catch (const PrecisionLimit& e) {
      only_rank_deficient = only_rank_deficient && e.rank_deficient();
      limit = e.what();
      symptom = e.symptom();
      limit_digits = digits;
      continue;
    }
    if (rungs.size() == 1) return std::move(*upper);  // one rung: nothing to certify against
    if (lower) {
      const std::vector<const Figures*> a = figures_of(std::as_const(*lower));
      const std::vector<Figures*> b = figures_of(*upper);
      std::vector<std::map<std::string, int>> agreement;
      Shortfall worst;
      bool infinite = false;
      for (std::size_t f = 0; f < b.size(); ++f) {
        agreement.push_back(Agreement(*a[f], *b[f]));
        infinite = infinite || HasInfiniteKappa(*b[f]);
        for (const FigureRef& ref : kFigures) {
          const int d = agreement.back().at(ref.name);
          if (d < worst.digits) worst = {ref.name, d, a[f]->*ref.value, b[f]->*ref.value};
        }
      }
      // +inf (singular in this precision) is final only at the top rung.
      if (worst.digits >= kTargetDigits && (!infinite || top)) {
        for (std::size_t f = 0; f < b.size(); ++f) b[f]->certified_digits = agreement[f];
        if (certified_against) *certified_against = PrecisionName(lower_digits);
        return std::move(*upper);
      }
      shortfall = PrecisionName(lower_digits) + " and " + PrecisionName(digits) + " agree in " +
                  std::to_string(worst.digits) + " digits of " + worst.figure + " (" +
                  Num(worst.lower) + " vs " + Num(worst.upper) + ")" +
                  (infinite && worst.digits >= kTargetDigits ? ", a condition number is +inf"
                                                             : "");
    }
    lower = std::move(upper);
    lower_digits = digits;
  }

  std::string tried;
  for (int d : rungs) tried += (tried.empty() ? "" : ", ") + PrecisionName(d);
  // Singular: rank-deficient in every precision, and more than one was tried (one rung cannot
  // tell a singular matrix from one that needs more digits).
  if (!lower && only_rank_deficient && rungs.size() > 1) {
    throw NumericalError(what + ": " + limit + "; singular in every precision tried (" + tried +
                         ")");
  }
  std::string kappa = "kappa unknown";
  bool singular_at_lower = false;  // the highest precision that ran found a kappa of +inf
  if (lower) {  // the largest condition number the highest resolved precision found
    double value = 0;
    const char* name = "kappa_dec";
    for (const Figures* f : figures_of(std::as_const(*lower))) {
      if (!(f->kappa_dec <= value)) value = f->kappa_dec, name = "kappa_dec";
      if (!(f->kappa_enc <= value)) value = f->kappa_enc, name = "kappa_enc";
    }
    singular_at_lower = !std::isfinite(value);
    kappa = std::string(name) + (std::isfinite(value) ? " ≈ " + Num(value, 3)
                                                       : " beyond what " +
                                                             PrecisionName(lower_digits) +
                                                             " resolves");
  }
  std::string reason = shortfall;
  if (reason.empty()) {
    // A precision that ran but found kappa = +inf did not resolve the decoders either: say so
    // rather than "only it resolves them" beside "beyond what it resolves".
    reason = (!lower ? std::string("no precision resolves the decoders")
              : singular_at_lower
                  ? PrecisionName(lower_digits) +
                        " finds them singular to its working precision and no other precision "
                        "resolves them"
                  : "only " + PrecisionName(lower_digits) +
                        " resolves the decoders, no second precision certifies them") +
             " (" + PrecisionName(limit_digits) + ": " + symptom + ")";
  }
  const int top = rungs.back();
  throw NumericalError(what + ": too ill-conditioned for " + std::to_string(top) + " digits (" +
                       kappa + "): " + reason + "; raise the digit limit to " +
                       std::to_string(std::min(2 * top, kMaxDigits)) +
                       " (cerar --max-digits, Python max_digits)");
}

}  // namespace

std::vector<int> LadderRungs(int max_digits) {
  if (max_digits < kMp50Digits || max_digits > kMaxDigits) {
    throw InvalidArgument("max digits " + std::to_string(max_digits) + ": expected " +
                          std::to_string(kMp50Digits) + " ... " + std::to_string(kMaxDigits));
  }
  std::vector<int> rungs{kMp50Digits};
  for (int d = 2 * kMp50Digits; d < max_digits; d *= 2) rungs.push_back(d);
  if (max_digits > kMp50Digits) rungs.push_back(max_digits);
  return rungs;
}

}  // namespace cerar::design::detail

namespace cerar::design {

int AgreeingDigits(double a, double b, double zero) {
  using detail::kMaxCertifiedDigits;
  if (a == b) return kMaxCertifiedDigits;  // +inf == +inf included
  if (!std::isfinite(a) || !std::isfinite(b)) return 0;
  const double scale = std::max({std::abs(a), std::abs(b), zero});
  const double relative = std::abs(a - b) / scale;
  if (!(relative > 0)) return kMaxCertifiedDigits;
  return std::clamp(int(std::floor(-std::log10(relative))), 0, kMaxCertifiedDigits);
}

}  // namespace cerar::design

namespace cerar::design::detail {

std::map<std::string, int> Agreement(const Figures& a, const Figures& b) {
  std::map<std::string, int> out;
  for (const FigureRef& ref : kFigures) {
    const double zero = IsErrorFigure(ref.name) ? kZeroError : 0.0;
    int digits = AgreeingDigits(a.*ref.value, b.*ref.value, zero);
    const std::vector<double>& x = a.*ref.per_rank;
    const std::vector<double>& y = b.*ref.per_rank;
    if (x.size() != y.size()) digits = 0;
    for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) {
      digits = std::min(digits, AgreeingDigits(x[k], y[k], zero));
    }
    out[ref.name] = digits;
  }
  return out;
}

Certified DeriveCertified(const std::function<Derivation(int digits)>& derive, int max_digits,
                          const std::string& what) {
  Certified out;
  out.derivation = Climb<Derivation>(
      derive,
      [](auto& d) {
        using F = std::conditional_t<std::is_const_v<std::remove_reference_t<decltype(d)>>,
                                     const Figures*, Figures*>;
        return std::vector<F>{&d.stored, &d.exact};
      },
      max_digits, what, &out.certified_against);
  return out;
}

Figures AnalyseCertified(const std::function<Figures(int digits)>& analyse, int max_digits,
                         const std::string& what) {
  return Climb<Figures>(
      analyse,
      [](auto& f) {
        using F = std::conditional_t<std::is_const_v<std::remove_reference_t<decltype(f)>>,
                                     const Figures*, Figures*>;
        return std::vector<F>{&f};
      },
      max_digits, what, nullptr);
}

}  // namespace cerar::design::detail
