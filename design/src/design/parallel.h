#pragma once
// ParallelFor: runs body(0 .. n-1) on a few threads (per-rank work is independent). After all
// threads joined, the exception of the lowest failing index is rethrown in the caller, as a
// sequential loop would: tasks are handed out in increasing order and a failure only stops
// handing out later ones, so every lower index has run by then. (The first exception to be
// thrown depended on the threads' timing: "rank j = 1" where a serial run says "rank j = 0".) The pool is
// bounded by the hardware's threads; where a thread cannot be started (out of threads or of
// address space), the work runs on those that did start, the caller's thread at least.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace cerar::design::detail {

template <class Body>
void ParallelFor(int n, const Body& body) {
  const int threads =
      std::max(1, std::min<int>(n, static_cast<int>(std::thread::hardware_concurrency())));
  if (threads <= 1 || n <= 1) {
    for (int k = 0; k < n; ++k) body(k);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr error;
  int error_index = n;
  std::mutex error_mutex;
  auto worker = [&] {
    for (int k = next++; k < n; k = next++) {
      try {
        body(k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (k < error_index) {
          error = std::current_exception();
          error_index = k;
        }
        next = n;  // stop handing out work; every index below k was handed out already
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer helpers: the shared counter hands their tasks to the others
    }
  }
  worker();
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace cerar::design::detail
