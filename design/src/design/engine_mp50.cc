// The engine in 50-significant-digit arithmetic. The only translation unit that instantiates
// Boost.Multiprecision (compile time).
#include <Eigen/Core>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <limits>

namespace cerar::design::detail {
// 50 decimal digits, no expression templates (Eigen expects plain value types).
using Mp50 = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<50>,
                                           boost::multiprecision::et_off>;
static_assert(std::numeric_limits<Mp50>::digits10 >= 50);
}  // namespace cerar::design::detail

// Eigen's traits for the 50-digit type. Boost 1.74's boost/multiprecision/eigen.hpp predates
// Eigen 3.4 (no infinity()/quiet_NaN()), so we provide them; GenericNumTraits takes the rest
// from std::numeric_limits.
namespace Eigen {
template <>
struct NumTraits<cerar::design::detail::Mp50>
    : GenericNumTraits<cerar::design::detail::Mp50> {
  using Real = cerar::design::detail::Mp50;
  using NonInteger = Real;
  using Literal = Real;
  using Nested = Real;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 10,
    AddCost = 20,
    MulCost = 40
  };
  static Real epsilon() { return std::numeric_limits<Real>::epsilon(); }
  static Real dummy_precision() { return 1000 * epsilon(); }
  static Real highest() { return (std::numeric_limits<Real>::max)(); }
  static Real lowest() { return std::numeric_limits<Real>::lowest(); }
  static Real infinity() { return std::numeric_limits<Real>::infinity(); }
  static Real quiet_NaN() { return std::numeric_limits<Real>::quiet_NaN(); }
  static int digits10() { return std::numeric_limits<Real>::digits10; }
};
}  // namespace Eigen

#include "engine_impl.h"

namespace cerar::design::detail {

Derivation DeriveConstructionMp50(Construction construction, int N, int c, double eps) {
  return DeriveConstructionT<Mp50>(construction, N, c, eps);
}

Derivation DeriveFromEncodersMp50(int N, int c, const std::vector<MatrixXd>& encoders) {
  return DeriveT<Mp50>(N, c, FromFloat64<Mp50>(encoders));
}

Figures AnalyseMp50(int N, int c, const std::vector<MatrixXd>& encoders,
                    const std::vector<MatrixXd>& decoders) {
  return AnalyseT<Mp50>(N, c, FromFloat64<Mp50>(encoders), FromFloat64<Mp50>(decoders));
}

}  // namespace cerar::design::detail
