#include "watchdog.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace cerar::cli {
namespace {

struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool stood_down = false;
};

State& Shared() {
  static State* state = new State;  // never destroyed: the thread may outlive static destructors
  return *state;
}

}  // namespace

void Watchdog::Start(double seconds, std::string what) {
  // Past about 9.2e9 s, now + seconds overflows the clock's nanoseconds and would fire at once;
  // a deadline decades away never comes, so there is nothing to watch.
  if (seconds >= 1e9) return;
  State& s = Shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.started || s.stood_down) return;
    s.started = true;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  std::thread([&s, deadline, what = std::move(what)] {
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.cv.wait_until(lock, deadline, [&] { return s.stood_down; })) return;
    // Still holding the lock: StandDown cannot return, so no result is being written now.
    const std::string line = "cerar: " + what + "\n";
    std::fflush(stdout);
    (void)!::write(2, line.data(), line.size());
    std::_Exit(2);
  }).detach();
}

void Watchdog::StandDown() {
  State& s = Shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stood_down = true;
  }
  s.cv.notify_all();
}

}  // namespace cerar::cli
