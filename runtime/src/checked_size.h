#pragma once
// Size arithmetic that cannot wrap. Every product of element counts and sizes in the runtime
// goes through these, so an impossible request (count = 2^62 elements of 8 bytes) throws
// InvalidArgument naming it instead of allocating a wrapped-around, too small buffer.
#include <cstddef>
#include <string>

#include "cerar/errors.h"

namespace cerar::detail {

inline std::size_t CheckedMul(std::size_t a, std::size_t b, const std::string& what) {
  std::size_t product;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw InvalidArgument(what + ": " + std::to_string(a) + " x " + std::to_string(b) +
                          " bytes does not fit in 64 bits");
  }
  return product;
}

inline std::size_t CheckedAdd(std::size_t a, std::size_t b, const std::string& what) {
  std::size_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw InvalidArgument(what + ": " + std::to_string(a) + " + " + std::to_string(b) +
                          " bytes does not fit in 64 bits");
  }
  return sum;
}

}  // namespace cerar::detail
