#pragma once
// The design toolkit's public API: constructions (PROTOCOL.md §6), the least-squares decoder
// (§4), analysis in float64 and high precision (§5), the finite-precision error model and
// precision-aware tuning (§8). Implementation details (templated on the scalar type, with
// Boost.Multiprecision inside Eigen) live in design/src/design/ and never leak into this header,
// so users of this API do not compile Boost.Multiprecision. It builds designs, so it includes
// design_parts.h (Provenance, DesignParts; nlohmann/json).
#include <optional>
#include <string>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/format/design_parts.h"

namespace cerar::design {

// float64: IEEE double throughout; a design whose float64 figures cannot be trusted (a singular
// window, or kappa * u > 1e-2) is refused (NumericalError naming the rank).
// mp50: high precision with certified digits — the precision ladder (docs/error-model.md): 50,
// 100, 200, ... significant digits up to max_digits, until two precisions agree on every figure;
// the figures carry the digits in which they agree (Figures::certified_digits).
// auto: float64 where the condition numbers allow it (see NeedsHighPrecision), mp50 otherwise.
enum class Precision { kFloat64, kMp50, kAuto };
// "float64" | "auto" | "mp" (also "mp50", "mp100", ...: the ladder, bounded by max_digits).
Precision ParsePrecision(const std::string& name);
std::string ToString(Precision p);

// Highest working precision (significant digits) the ladder may use unless told otherwise:
// enough to certify condition numbers up to ~1e190 (docs/error-model.md).
inline constexpr int kDefaultMaxDigits = 400;

// Target arithmetic of a run, for the error model and tuning.
// kFloat32Acc64: float32 buffers and packets, the arithmetic in float64 with each stored result
// rounded once (the runtime's Accumulation::kFloat64).
// kFloat32Acc64Feedback: the same, and each rank feeds the rounding of its packets back into
// the ring once per lap where c > 2N (FeedsBackRounding, cerar/format/design.h; the runtime's
// Accumulation::kFloat64Feedback; docs/error-model.md); elsewhere it is kFloat32Acc64.
// kFloat32State64: float32 buffers and packets, everything a rank keeps in float64: encoded
// vectors, observations and feedback are never rounded, so the only roundings are the packets
// (fed back as in kFloat32Acc64Feedback where c > 2N) and the decoded result (the runtime's
// Accumulation::kFloat64State; docs/error-model.md, "Float64 state").
enum class Arithmetic {
  kFloat32, kFloat64, kBFloat16, kFloat32Acc64, kFloat32Acc64Feedback, kFloat32State64
};
// "float32" | "float64" | "bfloat16" | "float32+acc64" | "float32+acc64+feedback" |
// "float32+state64"
Arithmetic ParseArithmetic(const std::string& name);
std::string ToString(Arithmetic a);
double UnitRoundoff(Arithmetic a);  // 2^-24, 2^-53, 2^-8

enum class Construction { kEps, kVandermonde };
Construction ParseConstruction(const std::string& name);  // "eps" | "vandermonde"
std::string ToString(Construction c);

struct ConstructionOptions {
  Construction construction = Construction::kEps;
  int N = 8;
  int c = 16;
  double eps = 1e-3;
  Precision precision = Precision::kAuto;  // arithmetic used to derive decoders and figures
  int max_digits = kDefaultMaxDigits;      // top of the precision ladder (50: one rung, uncertified)
};

// Builds a shift-invariant design: encoders from the base sequence, least-squares decoders
// derived in the chosen precision (high precision for ill-conditioned designs), figures of the
// stored float64 matrices and, where rounding to float64 moves them, of the exact construction.
// Throws InvalidArgument for N < 2, c < 1, eps < 0 or not finite (eps = 0 allowed only c <= N),
// NumericalError when the windows are singular ("singular in every precision tried") or need
// more than max_digits ("too ill-conditioned for P digits (kappa ≈ ...); raise the digit limit
// to ...").
Design MakeConstruction(const ConstructionOptions& options);

// Any encoders (one per rank, L x c): least-squares decoders and figures. For random, custom
// and optimised designs.
Design MakeFromEncoders(int N, int c, std::vector<MatrixXd> encoders, Provenance provenance,
                        Precision precision = Precision::kAuto,
                        int max_digits = kDefaultMaxDigits);

// Figures of a design's matrices as stored (float64 values, analysed in `precision`; mp50 and
// auto's high-precision branch certify them, up to max_digits). float64 throws NumericalError
// where rounding would move the error figures by more than 1 % (the rule MakeConstruction
// applies to --precision float64).
Figures Analyse(const Design& design, Precision precision, int max_digits = kDefaultMaxDigits);

// True when float64 analysis of these figures can't be trusted (rounding amplified by the
// condition numbers is not small against the error).
bool NeedsHighPrecision(const Figures& float64_figures);

// docs/error-model.md: expected relative error of a run in `arithmetic` =
// approximation error (err_rms) + rounding error amplified by the design's conditioning.
// Returns figures.predicted_error[arithmetic] where present (filled by MakeConstruction,
// MakeFromEncoders and Analyse from the matrices), else a coarse estimate from err_rms and
// kappa_dec alone.
double PredictedError(const Figures& figures, int N, int c, Arithmetic arithmetic);

// The full model of docs/error-model.md evaluated on a design's matrices (uses its stored
// per-rank err_rms, or analyses it first when it has none).
double PredictedError(const Design& design, Arithmetic arithmetic);

// Base sequence C(tau) of PROTOCOL.md §6 in float64: row tau + N - 1 for
// tau = -(N-1) ... L-1 (L + N - 1 rows, c columns). E_i[t, :] = C(t - i).
MatrixXd BaseSequence(Construction construction, int N, int c, double eps);

// Picks eps minimising PredictedError for the target arithmetic. Returns the design at that eps.
struct TuneResult {
  double eps = 0;
  Design design;
};
TuneResult TuneEps(Construction construction, int N, int c, Arithmetic arithmetic,
                   Precision precision = Precision::kAuto, int max_digits = kDefaultMaxDigits);

// Figures over a log-spaced eps grid of 1 ... 10000 points (for the sweep command and notebooks).
struct SweepPoint {
  double eps = 0;
  Figures figures;
};
std::vector<SweepPoint> Sweep(Construction construction, int N, int c, double eps_from,
                              double eps_to, int points, Precision precision,
                              int max_digits = kDefaultMaxDigits);

}  // namespace cerar::design

namespace cerar::design {

// One recorded figure against its re-derivation (`cerar validate`, the catalogue test).
struct FigureCheck {
  std::string name;  // "figures.err_op", "figures.kappa_dec_per_rank[3]" (the worst rank),
                     // "figures.predicted_error[float32]", "exact_figures.err_rms", ...
  double recorded = 0;
  double derived = 0;
  int digits = 0;    // significant digits in which they agree (0 ... 15; see AgreeingDigits)
  int required = 0;  // digits they must agree in
  bool agree = false;
};

// Significant digits in which a and b agree: floor(-log10(|a - b| / max(|a|, |b|, zero))),
// clamped to 0 ... 15 (equal values, +inf included: 15).
int AgreeingDigits(double a, double b, double zero);

// Recorded figures against re-derived ones, one check per headline figure, per per-rank array
// (its worst rank) and per predicted_error entry. Required digits: where both sides are
// certified, the fewer of their certified digits (errors below 1e-30 count as zero); otherwise 6
// (1e-6 relative, errors below 1e-6 measured against 1e-6, i.e. 1e-12 absolute: float64 figures
// of exact designs are rounding noise). predicted_error entries need the digits of err_rms.
std::vector<FigureCheck> CompareFigures(const Figures& recorded, const Figures& derived,
                                        const std::string& prefix = "figures");

// What `cerar validate` does: re-derives every figure a design records — the figures of its
// stored matrices (analysed in `precision`, certified by the ladder for mp50/auto), their
// predicted errors (the error model on the re-derived err_rms), and, where the design records
// them, the exact construction's figures (the construction named by the provenance, rebuilt,
// or the stored encoders with unrounded decoders) — and compares each with CompareFigures.
struct Validation {
  Figures derived;                        // of the stored matrices
  std::optional<Figures> derived_exact;   // of the exact construction, when recorded
  std::vector<FigureCheck> checks;
  bool ok() const;
};
Validation Validate(const Design& design, Precision precision = Precision::kMp50,
                    int max_digits = kDefaultMaxDigits);

}  // namespace cerar::design
