// ParallelFor (design/src/design/parallel.h): every task runs once, errors reach the caller (the
// lowest failing index's), and a thread that cannot be started leaves the work to the threads
// that did (issue 14: it used to end in std::terminate).
#include "design/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common/address_space.h"

namespace cerar::design::detail {
namespace {

TEST(ParallelFor, RunsEveryTaskOnce) {
  std::vector<std::atomic<int>> runs(1000);
  ParallelFor(1000, [&](int k) { ++runs[k]; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ParallelFor, RethrowsATaskError) {
  EXPECT_THROW(ParallelFor(100, [](int k) {
                 if (k == 37) throw std::runtime_error("task 37");
               }),
               std::runtime_error);
}

// The lowest failing index's error, as a serial loop would give, even when a later task fails
// first: task 3 fails late, tasks 5, 7, ... at once (the CLI's "rank j = 0" message depended on
// which rank's thread threw first).
TEST(ParallelFor, RethrowsTheLowestFailingTasksError) {
  for (int rep = 0; rep < 5; ++rep) {
    try {
      ParallelFor(64, [](int k) {
        if (k == 3) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw std::runtime_error("task 3");
        }
        if (k > 3 && k % 2 == 1) throw std::runtime_error("task " + std::to_string(k));
      });
      FAIL() << "no throw";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "task 3") << "repetition " << rep;
    }
  }
}

TEST(ParallelFor, FinishesOnTheCallersThreadWhenNoThreadCanStart) {
  if (test_common::kSanitized) GTEST_SKIP() << "address-space limits do not apply under ASan";
  // 1 MiB of headroom: no 8 MiB thread stack fits.
  const int status = test_common::ExitStatusUnderAddressLimit(std::size_t{1} << 20, [] {
    std::atomic<int> done{0};
    ParallelFor(64, [&](int) { ++done; });
    return done.load() == 64 ? 0 : 1;
  });
  EXPECT_EQ(status, 0) << "1: tasks lost; 106: std::terminate";
}

}  // namespace
}  // namespace cerar::design::detail
