// Public entry points: constructions, decoders for given encoders, analysis, precision choice.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/format/errors.h"
#include "engine.h"
#include "error_model.h"

namespace cerar::design {
namespace {

std::string Num(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", x);
  return buffer;
}

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

// kAuto: float64 first; high precision when float64 fails or can't be trusted.
template <class F64, class Mp>
detail::Derivation Derive(Precision precision, const F64& float64, const Mp& mp50) {
  if (precision == Precision::kFloat64) return float64();
  if (precision == Precision::kMp50) return mp50();
  try {
    detail::Derivation d = float64();
    if (!NeedsHighPrecision(d.stored)) return d;
  } catch (const NumericalError&) {
    // singular or non-finite in float64: decide in mp50
  }
  return mp50();
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
        moved += std::string(moved.empty() ? "" : ", ") + name + " from " + Num(exact) + " to " +
                 Num(stored);
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

}  // namespace

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
  detail::Derivation d = Derive(
      o.precision,
      [&] { return detail::DeriveConstructionFloat64(o.construction, o.N, o.c, o.eps); },
      [&] { return detail::DeriveConstructionMp50(o.construction, o.N, o.c, o.eps); });
  Provenance provenance;
  provenance.construction = ToString(o.construction);
  provenance.shift_invariant = true;
  provenance.parameters = {{"eps", o.eps},
                           {"precision", d.stored.precision},
                           {"requested_precision", ToString(o.precision)}};
  const std::string source = name + " N = " + std::to_string(o.N) + ", c = " +
                             std::to_string(o.c) + ", eps = " + Num(o.eps);
  return Finish(o.N, o.c, std::move(d), std::move(provenance), source);
}

Design MakeFromEncoders(int N, int c, std::vector<MatrixXd> encoders, Provenance provenance,
                        Precision precision) {
  CheckNc(N, c, "MakeFromEncoders");
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
  detail::Derivation d = Derive(
      precision, [&] { return detail::DeriveFromEncodersFloat64(N, c, encoders); },
      [&] { return detail::DeriveFromEncodersMp50(N, c, encoders); });
  const std::string source = provenance.construction + " design N = " + std::to_string(N) +
                             ", c = " + std::to_string(c);
  return Finish(N, c, std::move(d), std::move(provenance), source);
}

Figures Analyse(const Design& design, Precision precision) {
  const int N = design.N(), c = design.c();
  Figures f;
  if (precision == Precision::kMp50) {
    f = detail::AnalyseMp50(N, c, design.encoders(), design.decoders());
  } else {
    f = detail::AnalyseFloat64(N, c, design.encoders(), design.decoders());
    if (precision == Precision::kAuto && NeedsHighPrecision(f)) {
      f = detail::AnalyseMp50(N, c, design.encoders(), design.decoders());
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
