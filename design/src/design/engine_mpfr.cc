// The engine in MPFR arithmetic at a precision chosen at run time (the ladder's rungs above 50
// digits). The only translation unit that includes MPFR.
//
// Boost 1.74 keeps MPFR's default precision in one process-wide variable, read whenever a number
// is created, including by ParallelFor's worker threads. A mutex therefore serialises the
// variable-precision analyses of a process, each of which sets the precision for its duration.
#include <Eigen/Core>
#include <boost/multiprecision/mpfr.hpp>
#include <mutex>

#include "mp_traits.h"

namespace cerar::design::detail {
using Mpfr = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<0>,
                                           boost::multiprecision::et_off>;
}  // namespace cerar::design::detail

namespace Eigen {
template <>
struct NumTraits<cerar::design::detail::Mpfr>
    : cerar::design::detail::MpNumTraits<cerar::design::detail::Mpfr> {
  using Real = cerar::design::detail::Mpfr;
};
}  // namespace Eigen

#include "engine_impl.h"

namespace cerar::design::detail {
namespace {

std::mutex& PrecisionMutex() {
  static std::mutex m;
  return m;
}

// Holds the process's MPFR precision at `digits` for one analysis.
class PrecisionScope {
 public:
  explicit PrecisionScope(int digits) : lock_(PrecisionMutex()), saved_(Mpfr::default_precision()) {
    if (digits <= kMp50Digits) {
      throw InvalidArgument("MPFR working precision " + std::to_string(digits) +
                            " digits: expected more than " + std::to_string(kMp50Digits));
    }
    Mpfr::default_precision(static_cast<unsigned>(digits));
  }
  ~PrecisionScope() { Mpfr::default_precision(saved_); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
  unsigned saved_;
};

}  // namespace

template <>
std::string PrecisionName<Mpfr>() {
  return PrecisionName(static_cast<int>(Mpfr::default_precision()));
}

Derivation DeriveConstructionMpfr(int digits, Construction construction, int N, int c,
                                  double eps) {
  PrecisionScope scope(digits);
  return DeriveConstructionT<Mpfr>(construction, N, c, eps);
}

Derivation DeriveFromEncodersMpfr(int digits, int N, int c, const std::vector<MatrixXd>& encoders) {
  PrecisionScope scope(digits);
  return DeriveT<Mpfr>(N, c, FromFloat64<Mpfr>(encoders));
}

Figures AnalyseMpfr(int digits, int N, int c, const std::vector<MatrixXd>& encoders,
                    const std::vector<MatrixXd>& decoders) {
  PrecisionScope scope(digits);
  return AnalyseT<Mpfr>(N, c, FromFloat64<Mpfr>(encoders), FromFloat64<Mpfr>(decoders));
}

}  // namespace cerar::design::detail
