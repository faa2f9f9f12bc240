#pragma once
// The design toolkit's public API: constructions (PROTOCOL.md §6), the least-squares decoder
// (§4), analysis in float64 and high precision (§5), the finite-precision error model and
// precision-aware tuning (§8). Implementation details (templated on the scalar type, with
// Boost.Multiprecision inside Eigen) live in design/src/design/ and never leak into this header,
// so users of this API do not compile Boost.Multiprecision. It builds designs, so it includes
// design_parts.h (Provenance, DesignParts; nlohmann/json).
#include <string>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/format/design_parts.h"

namespace cerar::design {

// float64: IEEE double throughout. mp50: Boost.Multiprecision with 50 significant digits.
// auto: float64 where the condition numbers allow it, mp50 otherwise (see NeedsHighPrecision).
enum class Precision { kFloat64, kMp50, kAuto };
Precision ParsePrecision(const std::string& name);  // "float64" | "mp50" | "auto"
std::string ToString(Precision p);

// Target arithmetic of a run, for the error model and tuning.
enum class Arithmetic { kFloat32, kFloat64, kBFloat16 };
Arithmetic ParseArithmetic(const std::string& name);  // "float32" | "float64" | "bfloat16"
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
};

// Builds a shift-invariant design: encoders from the base sequence, least-squares decoders
// derived in the chosen precision (high precision for ill-conditioned designs), figures of the
// stored float64 matrices and, where rounding to float64 moves them, of the exact construction.
// Throws InvalidArgument for N < 2, c < 1, eps < 0 or not finite (eps = 0 allowed only c <= N).
Design MakeConstruction(const ConstructionOptions& options);

// Any encoders (one per rank, L x c): least-squares decoders and figures. For random, custom
// and optimised designs.
Design MakeFromEncoders(int N, int c, std::vector<MatrixXd> encoders, Provenance provenance,
                        Precision precision = Precision::kAuto);

// Figures of a design's matrices as stored (float64 values, analysed in `precision`).
Figures Analyse(const Design& design, Precision precision);

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
                   Precision precision = Precision::kAuto);

// Figures over a log-spaced eps grid (for the sweep command and notebooks).
struct SweepPoint {
  double eps = 0;
  Figures figures;
};
std::vector<SweepPoint> Sweep(Construction construction, int N, int c, double eps_from,
                              double eps_to, int points, Precision precision);

}  // namespace cerar::design

namespace cerar::design {

// One figure of a recorded/re-derived comparison (`cerar validate`, the catalogue test).
struct FigureCheck {
  std::string name;  // err_op, err_rms, kappa_dec, kappa_enc
  double recorded = 0;
  double derived = 0;
  bool agree = false;
};

// Compares the four headline figures. Error figures are relative errors: they agree within 1e-6
// relative or 1e-12 absolute (the floor covers exact designs, whose error is rounding noise of
// order 1e-16 and differs between analyses); condition numbers agree within 1e-6 relative.
std::vector<FigureCheck> CompareFigures(const Figures& recorded, const Figures& derived);

}  // namespace cerar::design
