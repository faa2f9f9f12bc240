// The engine in IEEE double (fast; trusted only where NeedsHighPrecision says so), and the
// dispatch from a working precision in digits to the three instantiations.
#include "engine_impl.h"

namespace cerar::design::detail {

template <>
std::string PrecisionName<double>() {
  return PrecisionName(kFloat64Digits);
}

std::string PrecisionName(int digits) {
  return digits == kFloat64Digits ? "float64" : "mp" + std::to_string(digits);
}

Derivation DeriveConstructionFloat64(Construction construction, int N, int c, double eps) {
  return DeriveConstructionT<double>(construction, N, c, eps);
}

Derivation DeriveFromEncodersFloat64(int N, int c, const std::vector<MatrixXd>& encoders) {
  return DeriveT<double>(N, c, FromFloat64<double>(encoders));
}

Figures AnalyseFloat64(int N, int c, const std::vector<MatrixXd>& encoders,
                       const std::vector<MatrixXd>& decoders) {
  return AnalyseT<double>(N, c, FromFloat64<double>(encoders), FromFloat64<double>(decoders));
}

MatrixXd BaseSequenceFloat64(Construction construction, int N, int c, double eps) {
  return BaseSequence<double>(construction, N, c, eps);
}

Derivation DeriveConstruction(int digits, Construction construction, int N, int c, double eps) {
  if (digits == kFloat64Digits) return DeriveConstructionFloat64(construction, N, c, eps);
  if (digits == kMp50Digits) return DeriveConstructionMp50(construction, N, c, eps);
  return DeriveConstructionMpfr(digits, construction, N, c, eps);
}

Derivation DeriveFromEncoders(int digits, int N, int c, const std::vector<MatrixXd>& encoders) {
  if (digits == kFloat64Digits) return DeriveFromEncodersFloat64(N, c, encoders);
  if (digits == kMp50Digits) return DeriveFromEncodersMp50(N, c, encoders);
  return DeriveFromEncodersMpfr(digits, N, c, encoders);
}

Figures AnalyseMatrices(int digits, int N, int c, const std::vector<MatrixXd>& encoders,
                        const std::vector<MatrixXd>& decoders) {
  if (digits == kFloat64Digits) return AnalyseFloat64(N, c, encoders, decoders);
  if (digits == kMp50Digits) return AnalyseMp50(N, c, encoders, decoders);
  return AnalyseMpfr(digits, N, c, encoders, decoders);
}

}  // namespace cerar::design::detail
