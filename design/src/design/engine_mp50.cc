// The engine in 50-significant-digit arithmetic (Boost.Multiprecision cpp_bin_float<50>, no
// allocation per number: the fastest first rung of the precision ladder).
#include <Eigen/Core>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <limits>

#include "engine.h"
#include "mp_traits.h"

namespace cerar::design::detail {
// 50 decimal digits, no expression templates (Eigen expects plain value types).
using Mp50 = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<kMp50Digits>,
                                           boost::multiprecision::et_off>;
static_assert(std::numeric_limits<Mp50>::digits10 >= kMp50Digits);
}  // namespace cerar::design::detail

namespace Eigen {
template <>
struct NumTraits<cerar::design::detail::Mp50>
    : cerar::design::detail::MpNumTraits<cerar::design::detail::Mp50> {
  using Real = cerar::design::detail::Mp50;
};
}  // namespace Eigen

#include "engine_impl.h"

namespace cerar::design::detail {

template <>
std::string PrecisionName<Mp50>() {
  return PrecisionName(kMp50Digits);
}

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
