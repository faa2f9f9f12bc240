#pragma once
// Precision-dispatched numerical engine of the design toolkit (private).
//
// One templated implementation (engine_impl.h) is instantiated three times: for double
// (engine_float64.cc), for a 50-digit Boost.Multiprecision binary float (engine_mp50.cc) and for
// MPFR floats whose precision is chosen at run time (engine_mpfr.cc, 51 digits and up). Inputs
// and outputs here are float64 so that no multiprecision type leaves those files. The precision
// ladder (ladder.h) calls these one working precision ("rung") at a time.
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"
#include "cerar/errors.h"

namespace cerar::design::detail {

// Working precision in significant decimal digits: kFloat64Digits is IEEE double; 50 is the
// compile-time cpp_bin_float<50>; any other count (> 50) runs MPFR at that precision.
inline constexpr int kFloat64Digits = 0;
inline constexpr int kMp50Digits = 50;

// "float64", "mp50", "mp100", ...
std::string PrecisionName(int digits);

// The working precision is not enough to decide: a Gram matrix is numerically rank-deficient or
// a decoder entry overflows. A higher precision may succeed (the ladder escalates on it); every
// other error is final. `rank_deficient` tells the two apart for the "singular" message.
// `symptom` says what happened without judging it ("numerical rank 20 < c = 24 for rank j = 0"),
// for the ladder's "too ill-conditioned" message.
class PrecisionLimit : public NumericalError {
 public:
  PrecisionLimit(const std::string& what, const std::string& symptom, bool rank_deficient)
      : NumericalError(what), symptom_(symptom), rank_deficient_(rank_deficient) {}
  const std::string& symptom() const { return symptom_; }
  bool rank_deficient() const { return rank_deficient_; }

 private:
  std::string symptom_;
  bool rank_deficient_;
};

// A design derived in some working precision.
struct Derivation {
  std::vector<MatrixXd> encoders;  // E_i rounded to float64 (as a design file stores them)
  std::vector<MatrixXd> decoders;  // D_j rounded to float64
  Figures stored;                  // figures of the rounded matrices, analysed in that precision
  Figures exact;                   // figures of the unrounded matrices (== stored for float64)
};

// Shift-invariant construction of PROTOCOL.md §6: the base sequence is evaluated in the working
// precision, the least-squares decoders (§4) derived in it. Throws PrecisionLimit when a Gram
// matrix is numerically singular or a decoder entry is not finite, NumericalError when C has a
// non-finite value (eps too large).
Derivation DeriveConstruction(int digits, Construction construction, int N, int c, double eps);

// Least-squares decoders for given float64 encoders (N matrices, L x c, sizes already checked).
Derivation DeriveFromEncoders(int digits, int N, int c, const std::vector<MatrixXd>& encoders);

// Figures (§5) of given float64 matrices, computed in the working precision.
Figures AnalyseMatrices(int digits, int N, int c, const std::vector<MatrixXd>& encoders,
                        const std::vector<MatrixXd>& decoders);

// Base sequence C(tau), tau = -(N-1) ... L-1 (row tau + N - 1), in float64.
MatrixXd BaseSequenceFloat64(Construction construction, int N, int c, double eps);

// The three instantiations behind the dispatchers above (engine_float64.cc, engine_mp50.cc,
// engine_mpfr.cc).
Derivation DeriveConstructionFloat64(Construction construction, int N, int c, double eps);
Derivation DeriveConstructionMp50(Construction construction, int N, int c, double eps);
Derivation DeriveConstructionMpfr(int digits, Construction construction, int N, int c,
                                  double eps);
Derivation DeriveFromEncodersFloat64(int N, int c, const std::vector<MatrixXd>& encoders);
Derivation DeriveFromEncodersMp50(int N, int c, const std::vector<MatrixXd>& encoders);
Derivation DeriveFromEncodersMpfr(int digits, int N, int c, const std::vector<MatrixXd>& encoders);
Figures AnalyseFloat64(int N, int c, const std::vector<MatrixXd>& encoders,
                       const std::vector<MatrixXd>& decoders);
Figures AnalyseMp50(int N, int c, const std::vector<MatrixXd>& encoders,
                    const std::vector<MatrixXd>& decoders);
Figures AnalyseMpfr(int digits, int N, int c, const std::vector<MatrixXd>& encoders,
                    const std::vector<MatrixXd>& decoders);

}  // namespace cerar::design::detail
