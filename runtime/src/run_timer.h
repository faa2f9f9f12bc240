#pragma once
// Host-clock accounting for RunTimes (allreduce.h): a Stopwatch adds its scope's duration to one
// field, also when the scope ends by an exception.
#include <chrono>

#include "cerar/runtime/allreduce.h"

namespace cerar::detail {

class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(Clock::now()) {}
  ~Stopwatch() { total_ += std::chrono::duration<double>(Clock::now() - start_).count(); }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  double& total_;
  Clock::time_point start_;
};

}  // namespace cerar::detail
