// Public entry points: constructions, decoders for given encoders, analysis, precision choice.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "derive.h"
#include "engine.h"
#include "error_model.h"
#include "ladder.h"
#include "text.h"

namespace cerar::design {
namespace {

using detail::Num;

void CheckNc(int N, int c, const std::string& what) {
  if (N < 2 || N > kMaxN) {
    throw InvalidArgument(what + ": N = " + std::to_string(N) + ", expected 2 <= N <= " +
                          std::to_string(kMaxN));
  }
  if (c < 1 || c > kMaxC) {
    throw InvalidArgument(what + ": c = " + std::to_string(c) + ", expected 1 <= c <= " +
                          std::to_string(kMaxC));
  }
  const std::int64_t entries = std::int64_t(N) * ((std::int64_t(c) + N - 2) * c + std::int64_t(c) * c);
  if (entries > kMaxMatrixEntries) {
    throw InvalidArgument(what + ": N = " + std::to_string(N) + ", c = " + std::to_string(c) +
                          " need " + std::to_string(entries) + " matrix entries, above " +
                          std::to_string(kMaxMatrixEntries));
  }
}

// float64 figures that cannot be trusted: a non-finite figure, or kappa u64 above 1e-2 of
// max(err_rms, 1e-8) on some rank. Rounding in the float64 derivation moves the error figures by
// about kappa_dec u (the least-squares residual's forward error; measured 0.3-2 kappa u,
// tests/design/precision_test.cc) and the condition numbers by kappa u relative, so this keeps
// every figure within ~1 % (errors below 1e-8 within 1e-10). The message names the worst rank and
// says which precision to use instead.
constexpr double kFloat64TrustLimit = 1e-2;
constexpr double kFloat64ErrorFloor = 1e-8;

void RefuseUntrustedFloat64(const Figures& f, const std::string& what) {
  const double u = UnitRoundoff(Arithmetic::kFloat64);
  std::string figure = "kappa_dec";
  int rank = 0;
  double worst = 0;
  auto look = [&](const std::vector<double>& per_rank, const char* name) {
    for (std::size_t j = 0; j < per_rank.size(); ++j) {
      if (!(per_rank[j] <= worst)) worst = per_rank[j], rank = int(j), figure = name;
    }
  };
  look(f.kappa_dec_per_rank, "kappa_dec");
  look(f.kappa_enc_per_rank, "kappa_enc");
  const bool finite = std::isfinite(f.err_op) && std::isfinite(f.err_rms) &&
                      std::isfinite(f.kappa_dec) && std::isfinite(f.kappa_enc);
  const double scale = std::max(f.err_rms, kFloat64ErrorFloor);
  if (finite && worst * u <= kFloat64TrustLimit * scale) return;
  const std::string where = figure + " of rank " + std::to_string(rank);
  throw NumericalError(
      what + ": float64 cannot be trusted here: " +
      (!std::isfinite(worst) ? where + " is +inf in float64 (singular)"
       : !finite             ? "a figure is not finite in float64"
                             : where + " is " + Num(worst, 3) +
                                   " in float64, so rounding moves the error figures by about "
                                   "kappa * u = " +
                                   Num(worst * u, 2) + ", more than 1 % of " +
                                   (f.err_rms >= kFloat64ErrorFloor
                                        ? "err_rms = " + Num(f.err_rms, 3)
                                        : "1e-08 (the floor for tiny errors)")) +
      "; use --precision auto or mp (high precision, certified)");
}

// float64, refused where untrusted; auto: float64 where NeedsHighPrecision allows, else the
// ladder; mp50: the ladder.
template <class At>
detail::Outcome DeriveIn(Precision precision, int max_digits, const At& at,
                         const std::string& what) {
  if (precision == Precision::kFloat64) {
    detail::Derivation d;
    try {
      d = at(detail::kFloat64Digits);
    } catch (const detail::PrecisionLimit& e) {
      throw NumericalError(what + ": " + e.what() +
                           "; float64 cannot tell a singular window from an ill-conditioned one: "
                           "use --precision auto or mp (high precision, certified)");
    }
    RefuseUntrustedFloat64(d.stored, what);
    return {std::move(d), ""};
  }
  if (precision == Precision::kAuto) {
    try {
      detail::Derivation d = at(detail::kFloat64Digits);
      if (!NeedsHighPrecision(d.stored)) return {std::move(d), ""};
    } catch (const detail::PrecisionLimit&) {
      // singular or non-finite in float64: the ladder decides
    }
  }
  detail::Certified c = detail::DeriveCertified(at, max_digits, what);
  return {std::move(c.derivation), std::move(c.certified_against)};
}

// Largest relative change between two figures (treats both tiny as equal).
double RelativeChange(double exact, double stored) {
  if (exact == stored) return 0;
  if (!std::isfinite(exact) || !std::isfinite(stored)) return std::numeric_limits<double>::infinity();
  return std::abs(stored - exact) / std::max(std::abs(exact), 1e-300);
}

// Figures and predicted errors of the stored matrices; exact figures and a note where rounding
// the matrices to float64 moved a figure by more than 0.1 % (figures are quoted to 3 digits).
Design Finish(int N, int c, detail::Derivation d, Provenance provenance, const std::string& source) {
  DesignParts parts;
  parts.N = N;
  parts.c = c;
  parts.provenance = std::move(provenance);
  d.stored.predicted_error =
      detail::ModelErrors(N, c, d.encoders, d.decoders, d.stored.err_rms_per_rank);
  if (d.stored.precision != "float64") {
    std::string moved;
    auto compare = [&](const char* name, double exact, double stored) {
      if (RelativeChange(exact, stored) > 1e-3) {
        moved += std::string(moved.empty() ? "" : ", ") + name + " from " + Num(exact, 4) +
                 " to " + Num(stored, 4);
      }
    };
    compare("err_op", d.exact.err_op, d.stored.err_op);
    compare("err_rms", d.exact.err_rms, d.stored.err_rms);
    compare("kappa_dec", d.exact.kappa_dec, d.stored.kappa_dec);
    compare("kappa_enc", d.exact.kappa_enc, d.stored.kappa_enc);
    if (!moved.empty()) {
      parts.exact_figures = d.exact;
      parts.notes.push_back("rounding E and D to float64 moves " + moved +
                            " (exact construction -> stored matrices, both analysed in " +
                            d.stored.precision + ")");
    }
  }
  parts.figures = std::move(d.stored);
  parts.encoders = std::move(d.encoders);
  parts.decoders = std::move(d.decoders);
  return Design::Create(std::move(parts), source);
}

int FewestDigits(const Figures& f) {
  int fewest = detail::kMaxCertifiedDigits;
  for (const auto& [name, digits] : f.certified_digits) fewest = std::min(fewest, digits);
  return fewest;
}

}  // namespace

namespace detail {

std::string ConstructionName(const ConstructionOptions& o) {
  return ToString(o.construction) + " construction N = " + std::to_string(o.N) + ", c = " +
         std::to_string(o.c) + ", eps = " + Num(o.eps);
}

Outcome DeriveConstructionIn(const ConstructionOptions& o) {
  return DeriveIn(
      o.precision, o.max_digits,
      [&](int digits) { return DeriveConstruction(digits, o.construction, o.N, o.c, o.eps); },
      ConstructionName(o));
}

// Least squares is invariant under E -> 2^k E, D -> 2^-k D, and the scaling is exact, but the
// Gram matrices W W^T of encoders with entries near 1e300 (1e-300) overflow (underflow) and
// read as singular. Encoders far from 1 are derived at entries near 1, the decoders scaled back.
Outcome DeriveFromEncodersIn(int N, int c, const std::vector<MatrixXd>& encoders,
                             Precision precision, int max_digits, const std::string& what) {
  double max_e = 0;
  for (const MatrixXd& e : encoders)
    if (e.size() > 0) max_e = std::max(max_e, e.cwiseAbs().maxCoeff());
  const int k = max_e > 0 ? std::ilogb(max_e) : 0;
  if (std::abs(k) <= 64) {
    return DeriveIn(
        precision, max_digits,
        [&](int digits) { return DeriveFromEncoders(digits, N, c, encoders); }, what);
  }
  std::vector<MatrixXd> scaled = encoders;
  for (MatrixXd& e : scaled) e = e.unaryExpr([k](double x) { return std::ldexp(x, -k); });
  Outcome out = DeriveIn(
      precision, max_digits,
      [&](int digits) { return DeriveFromEncoders(digits, N, c, scaled); }, what);
  out.derivation.encoders = encoders;
  for (std::size_t j = 0; j < out.derivation.decoders.size(); ++j) {
    MatrixXd& d = out.derivation.decoders[j];
    d = d.unaryExpr([k](double x) { return std::ldexp(x, -k); });
    if (!d.allFinite())
      throw InvalidArgument(what + ": the encoders' entries reach " + Num(max_e, 3) +
                            ", and decoder D[" + std::to_string(j) +
                            "] then has entries beyond float64's range; scale the encoders "
                            "towards 1 (a design is invariant under E -> s E, D -> D / s)");
  }
  return out;
}

}  // namespace detail

// Rule (docs/error-model.md): float64 derivation perturbs Delta = D W - I by about
// u64 kappa^2 (1 + kappa err_op) (least-squares forward error u kappa (1 + kappa * residual),
// times ||D|| ||W|| ~ kappa). Trust float64 only when that is below 1e-3 of err_rms, where
// err_rms below 1e-10 counts as 1e-10 (exact designs: float64 then resolves ~1e-13).
bool NeedsHighPrecision(const Figures& f) {
  const double values[] = {f.err_op, f.err_rms, f.kappa_dec, f.kappa_enc};
  for (double v : values) {
    if (!std::isfinite(v)) return true;
  }
  const double u64 = UnitRoundoff(Arithmetic::kFloat64);
  const double kappa = std::max(1.0, f.kappa_dec);
  const double rounding = u64 * kappa * kappa * (1.0 + kappa * f.err_op);
  return rounding > 1e-3 * std::max(f.err_rms, 1e-10);
}

MatrixXd BaseSequence(Construction construction, int N, int c, double eps) {
  CheckNc(N, c, ToString(construction) + " construction");
  if (!std::isfinite(eps) || eps < 0) {
    throw InvalidArgument(ToString(construction) + " construction: eps = " + Num(eps) +
                          ", expected a finite eps >= 0");
  }
  return detail::BaseSequenceFloat64(construction, N, c, eps);
}

Design MakeConstruction(const ConstructionOptions& o) {
  const std::string name = ToString(o.construction) + " construction";
  CheckNc(o.N, o.c, name);
  if (!std::isfinite(o.eps) || o.eps < 0) {
    throw InvalidArgument(name + ": eps = " + Num(o.eps) + ", expected a finite eps >= 0");
  }
  if (o.eps == 0 && o.c > o.N) {
    throw InvalidArgument(name + ": eps = 0 with c = " + std::to_string(o.c) + " > N = " +
                          std::to_string(o.N) + "; eps = 0 is allowed only for c <= N");
  }
  detail::LadderRungs(o.max_digits);  // checks max_digits before any work
  detail::Outcome out = detail::DeriveConstructionIn(o);
  Provenance provenance;
  provenance.construction = ToString(o.construction);
  provenance.shift_invariant = true;
  provenance.parameters = {{"eps", o.eps},
                           {"precision", out.derivation.stored.precision},
                           {"requested_precision", ToString(o.precision)}};
  if (!out.certified_against.empty()) {
    // How the figures were certified (docs/error-model.md): the ladder's two precisions and the
    // fewest digits in which they agree, over the stored and the exact figures.
    provenance.parameters["certified_against"] = out.certified_against;
    provenance.parameters["certified_digits"] =
        std::min(FewestDigits(out.derivation.stored), FewestDigits(out.derivation.exact));
    provenance.parameters["max_digits"] = o.max_digits;
  }
  return Finish(o.N, o.c, std::move(out.derivation), std::move(provenance),
                detail::ConstructionName(o));
}

Design MakeFromEncoders(int N, int c, std::vector<MatrixXd> encoders, Provenance provenance,
                        Precision precision, int max_digits) {
  CheckNc(N, c, "MakeFromEncoders");
  detail::LadderRungs(max_digits);
  const int L = c + N - 2;
  if (static_cast<int>(encoders.size()) != N) {
    throw InvalidArgument("MakeFromEncoders: " + std::to_string(encoders.size()) +
                          " encoders, expected N = " + std::to_string(N));
  }
  for (int i = 0; i < N; ++i) {
    const MatrixXd& E = encoders[i];
    if (E.rows() != L || E.cols() != c) {
      throw InvalidArgument("MakeFromEncoders: E[" + std::to_string(i) + "] is " +
                            std::to_string(E.rows()) + " x " + std::to_string(E.cols()) +
                            ", expected " + std::to_string(L) + " x " + std::to_string(c) +
                            " (L = c + N - 2 rows, c columns)");
    }
    if (!E.allFinite()) {
      throw InvalidArgument("MakeFromEncoders: E[" + std::to_string(i) +
                            "] has a non-finite entry");
    }
  }
  const std::string source = provenance.construction + " design N = " + std::to_string(N) +
                             ", c = " + std::to_string(c);
  detail::Outcome out = detail::DeriveFromEncodersIn(N, c, encoders, precision, max_digits, source);
  return Finish(N, c, std::move(out.derivation), std::move(provenance), source);
}

Figures Analyse(const Design& design, Precision precision, int max_digits) {
  const int N = design.N(), c = design.c();
  detail::LadderRungs(max_digits);
  auto at = [&](int digits) {
    return detail::AnalyseMatrices(digits, N, c, design.encoders(), design.decoders());
  };
  const std::string what = "analysis of the design N = " + std::to_string(N) + ", c = " +
                           std::to_string(c);
  Figures f;
  if (precision == Precision::kMp50) {
    f = detail::AnalyseCertified(at, max_digits, what);
  } else {
    f = at(detail::kFloat64Digits);
    if (precision == Precision::kAuto && NeedsHighPrecision(f)) {
      f = detail::AnalyseCertified(at, max_digits, what);
    } else if (precision == Precision::kFloat64) {
      // As when a design is made in float64: finite garbage (err_op 63.7 for a certified 56.7,
      // kappa_dec 9.2e18 for 4.5e18) must not be compared with a file's figures as if true.
      RefuseUntrustedFloat64(f, what);
    }
  }
  f.predicted_error =
      detail::ModelErrors(N, c, design.encoders(), design.decoders(), f.err_rms_per_rank);
  return f;
}

double PredictedError(const Design& design, Arithmetic arithmetic) {
  const auto& figures = design.figures();
  if (figures && static_cast<int>(figures->err_rms_per_rank.size()) == design.N()) {
    return detail::ModelError(design.N(), design.c(), design.encoders(), design.decoders(),
                              figures->err_rms_per_rank, arithmetic);
  }
  const Figures f = Analyse(design, Precision::kAuto);
  return f.predicted_error.at(ToString(arithmetic));
}

}  // namespace cerar::design
