#pragma once
// Deadlines of the transports' waits, and the pause between two polls of one. A timeout may be
// inf ("never give up") or so long that now + timeout overflows steady_clock's 64-bit nanoseconds
// (about 9.2e9 s from its epoch); both saturate at time_point::max() instead of wrapping into
// the past, which would time out at once.
#include <algorithm>
#include <chrono>
#include <thread>

namespace cerar::detail {

using Clock = std::chrono::steady_clock;

inline Clock::time_point DeadlineAfter(Clock::time_point from, double timeout_s) {
  const double left = std::chrono::duration<double>(Clock::time_point::max() - from).count();
  if (!(timeout_s < 0.5 * left)) return Clock::time_point::max();  // margin for the rounding
  return from +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

// Between polls of a transport's wait (MPI_Test, cudaEventQuery): spin first (a message may be a
// microsecond away), then yield, then sleep, so that a rank waiting on its link gives its core
// to ranks that compute (8 ranks share 2 cores here). The nap doubles from 20 us to 320 us: each
// poll costs a wakeup and an MPI_Test (a few microseconds), and with a fixed 20 us nap (about
// 70 us with the kernel's timer slack) a rank waiting on a 100 or 200 Mbit/s link spent 21-23 %
// of a core polling (benchmarks.md, "Waiting that costs a core"). Open MPI moves TCP bytes only
// inside MPI calls, but the socket buffers are autotuned to MiBs, far above 320 us of any link
// here, so the link does not idle while a rank naps; a completion is seen at most one nap late.
inline void PauseBetweenPolls(int polls) {
  if (polls < 64) return;
  if (polls < 256) {
    std::this_thread::yield();
    return;
  }
  const int doublings = std::min((polls - 256) / 8, 4);
  std::this_thread::sleep_for(std::chrono::microseconds(20 << doublings));
}

}  // namespace cerar::detail
