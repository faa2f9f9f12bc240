#pragma once
// Deadlines of the transports' waits. A timeout may be inf ("never give up") or so long that
// now + timeout overflows steady_clock's 64-bit nanoseconds (about 9.2e9 s from its epoch); both
// saturate at time_point::max() instead of wrapping into the past, which would time out at once.
#include <chrono>

namespace cerar::detail {

using Clock = std::chrono::steady_clock;

inline Clock::time_point DeadlineAfter(Clock::time_point from, double timeout_s) {
  const double left = std::chrono::duration<double>(Clock::time_point::max() - from).count();
  if (!(timeout_s < 0.5 * left)) return Clock::time_point::max();  // margin for the rounding
  return from +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

}  // namespace cerar::detail
