#pragma once
// What a run leaves behind. Host-clock accounting for RunTimes (allreduce.h): a Stopwatch adds its
// scope's duration to one field, also when the scope ends by an exception. After a failed run:
// FailureFlag marks the engine, Abandon keeps the blocks a transport may still write into, and
// Release frees (or keeps) a block from a destructor.
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <vector>

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

// Sets `failed` when its scope ends by an exception: a run that failed may leave receives posted
// into the engine's buffers (an MPI transport cannot take them back), so its destructor must not
// free them.
class FailureFlag {
 public:
  explicit FailureFlag(bool& failed) : failed_(failed), entry_(std::uncaught_exceptions()) {}
  ~FailureFlag() {
    if (std::uncaught_exceptions() > entry_) failed_ = true;
  }
  FailureFlag(const FailureFlag&) = delete;
  FailureFlag& operator=(const FailureFlag&) = delete;

 private:
  bool& failed_;
  int entry_;
};

// Keeps a block that a failed run may still be written into reachable until the process ends:
// never freed, and not a leak to a leak checker (LeakSanitizer reports unreachable blocks only).
inline void Abandon(void* block) {
  static std::mutex mutex;
  static std::vector<void*>* blocks = new std::vector<void*>();  // never destroyed
  const std::lock_guard<std::mutex> lock(mutex);
  try {
    blocks->push_back(block);
  } catch (...) {  // out of memory: the block stays unfreed all the same
  }
}

// An engine's destructor (noexcept) gives back its block: kept after a failed run while the
// transport may still write into it (above), freed otherwise. A Free that throws (the CUDA back
// end's cudaFree once any kernel in the process hit a sticky error) is reported on stderr and
// the block kept: a throw here was std::terminate.
inline void Release(ComputeBackend& backend, const Transport& transport, void* block, bool failed,
                    const char* who) noexcept {
  if (block == nullptr) return;
  if (failed && transport.MayStillWrite()) {
    Abandon(block);
    return;
  }
  try {
    backend.Free(block);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cerar: ignored in cleanup: %s could not free its buffer: %s\n", who,
                 e.what());
    Abandon(block);
  } catch (...) {
    std::fprintf(stderr, "cerar: ignored in cleanup: %s could not free its buffer\n", who);
    Abandon(block);
  }
}

}  // namespace cerar::detail
