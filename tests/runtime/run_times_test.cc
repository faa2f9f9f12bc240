// RunTimes (allreduce.h): where a run's wall time went. The parts lie within the whole, the
// arithmetic is seen, and a rank that starts late shows up as waiting on every other rank.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "test_designs.h"

namespace cerar {
namespace {

constexpr int kN = 4;
// Long beside scheduling delays on a loaded 2-core machine (0.05 s failed once in a full ctest -j2).
constexpr double kLateSeconds = 0.2;

// Rank 0 starts kLateSeconds late; every rank records its RunTimes. design: the coded engine;
// null: the ring.
std::vector<RunTimes> TimesWithALateRank0(const Design* design) {
  std::vector<RunTimes> out(kN);
  auto errors = RunInProcess(kN, [&](Transport& tr) {
    std::vector<float> buf(40000, float(tr.rank() + 1));
    const std::unique_ptr<ComputeBackend> backend = CreateCpuBackend();
    std::unique_ptr<CodedAllReduce> coded;
    std::unique_ptr<RingAllReduce> ring;
    if (design)
      coded = std::make_unique<CodedAllReduce>(*design, tr, *backend, buf.size());
    else
      ring = std::make_unique<RingAllReduce>(tr, *backend, buf.size());
    if (tr.rank() == 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
    if (coded) {
      coded->Run(buf.data());
      out[tr.rank()] = coded->last_run_times();
    } else {
      ring->Run(buf.data());
      out[tr.rank()] = ring->last_run_times();
    }
  });
  for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
  return out;
}

void ExpectConsistent(const std::vector<RunTimes>& t, const char* what) {
  for (int j = 0; j < kN; ++j) {
    SCOPED_TRACE(std::string(what) + ", rank " + std::to_string(j));
    EXPECT_GT(t[j].wall_s, 0.0);
    EXPECT_GT(t[j].compute_s, 0.0);  // 40 000 elements of arithmetic take measurable time
    EXPECT_GE(t[j].wait_s, 0.0);
    EXPECT_GE(t[j].progress_s, 0.0);
    EXPECT_LE(t[j].wait_s + t[j].compute_s + t[j].progress_s, t[j].wall_s);
  }
  // Rank 0's neighbours cannot finish before rank 0 starts: they wait at least most of its delay.
  for (int j = 1; j < kN; ++j)
    EXPECT_GE(t[j].wait_s, 0.8 * kLateSeconds) << what << ", rank " << j;
  // Rank 0 itself arrives when the others are ready: it waits less than they do.
  EXPECT_LT(t[0].wait_s, t[1].wait_s) << what;
}

TEST(RunTimes, CodedEngineSplitsWaitAndArithmetic) {
  const Design design = test::RandomDesign(kN, 8, 11);
  ExpectConsistent(TimesWithALateRank0(&design), "coded");
}

TEST(RunTimes, RingSplitsWaitAndArithmetic) {
  ExpectConsistent(TimesWithALateRank0(nullptr), "ring");
}

TEST(RunTimes, AnEmptyRunTakesNoTime) {
  const Design design = test::RandomDesign(kN, 8, 11);
  auto errors = RunInProcess(kN, [&](Transport& tr) {
    const std::unique_ptr<ComputeBackend> backend = CreateCpuBackend();
    CodedAllReduce coded(design, tr, *backend, 0);
    RingAllReduce ring(tr, *backend, 0);
    coded.Run(nullptr);
    ring.Run(nullptr);
    EXPECT_EQ(coded.last_run_times().wall_s, 0.0);
    EXPECT_EQ(ring.last_run_times().wall_s, 0.0);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
}

}  // namespace
}  // namespace cerar
