#pragma once
// Precision-dispatched numerical engine of the design toolkit (private).
//
// One templated implementation (engine_impl.h) is instantiated twice: for double
// (engine_float64.cc) and for a 50-digit Boost.Multiprecision float (engine_mp50.cc, the only
// translation unit that compiles Boost.Multiprecision). Inputs and outputs here are float64 so
// that the multiprecision type never leaves that one file.
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"

namespace cerar::design::detail {

// A design derived in some working precision.
struct Derivation {
  std::vector<MatrixXd> encoders;  // E_i rounded to float64 (as a design file stores them)
  std::vector<MatrixXd> decoders;  // D_j rounded to float64
  Figures stored;                  // figures of the rounded matrices, analysed in that precision
  Figures exact;                   // figures of the unrounded matrices (== stored for float64)
};

// Shift-invariant construction of PROTOCOL.md §6: the base sequence is evaluated in the working
// precision, the least-squares decoders (§4) derived in it. Throws NumericalError when C has a
// non-finite value or a Gram matrix is singular.
Derivation DeriveConstructionFloat64(Construction construction, int N, int c, double eps);
Derivation DeriveConstructionMp50(Construction construction, int N, int c, double eps);

// Least-squares decoders for given float64 encoders (N matrices, L x c, sizes already checked).
Derivation DeriveFromEncodersFloat64(int N, int c, const std::vector<MatrixXd>& encoders);
Derivation DeriveFromEncodersMp50(int N, int c, const std::vector<MatrixXd>& encoders);

// Figures (§5) of given float64 matrices, computed in the working precision.
Figures AnalyseFloat64(int N, int c, const std::vector<MatrixXd>& encoders,
                       const std::vector<MatrixXd>& decoders);
Figures AnalyseMp50(int N, int c, const std::vector<MatrixXd>& encoders,
                    const std::vector<MatrixXd>& decoders);

// Base sequence C(tau), tau = -(N-1) ... L-1 (row tau + N - 1), in float64. For tests/tools.
MatrixXd BaseSequenceFloat64(Construction construction, int N, int c, double eps);

}  // namespace cerar::design::detail
