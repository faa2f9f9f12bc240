// The engine in IEEE double (fast; trusted only where NeedsHighPrecision says so).
#include "engine_impl.h"

namespace cerar::design::detail {

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

}  // namespace cerar::design::detail
