#pragma once
// Eigen's traits for a Boost.Multiprecision float (private; included by engine_mp50.cc and
// engine_mpfr.cc only). Boost 1.74's boost/multiprecision/eigen.hpp predates Eigen 3.4 (no
// infinity()/quiet_NaN()), so we provide them; GenericNumTraits takes the rest from
// std::numeric_limits, which for MPFR's run-time precision reads the current default precision.
#include <Eigen/Core>
#include <limits>

namespace cerar::design::detail {

template <class Real>
struct MpNumTraits : Eigen::GenericNumTraits<Real> {
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

}  // namespace cerar::design::detail
