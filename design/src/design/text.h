#pragma once
// Numbers in messages as a user would write them: "1e-08", "0.0143", "3.13e+49" (printf %g),
// never std::to_string's fixed "0.000000".
#include <cstdio>
#include <string>

namespace cerar::design::detail {

inline std::string Num(double x, int significant = 6) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.*g", significant, x);
  return buffer;
}

}  // namespace cerar::design::detail
