// cerar-bench's memory estimate (apps/bench/memory.h) against the engine's own workspace layout
// (runtime/src/schedule.h, as CodedAllReduce builds it): never below it, so the check cannot let
// a run through that the OOM killer then ends; and not far above it, so it refuses nothing that
// fits.
#include <gtest/gtest.h>

#include <algorithm>

#include "cerar/format/design.h"
#include "memory.h"
#include "schedule.h"

namespace cerar::bench {
namespace {

// The engine's workspace for a CPU back end (coded_allreduce.cc's constructor).
std::size_t EngineWorkspace(int N, int c, DType dtype, std::size_t count, std::size_t segment,
                            int slots, Accumulation acc) {
  const std::size_t es = SizeOf(dtype);
  const std::size_t m = (count + std::size_t(c) - 1) / std::size_t(c);
  const std::size_t cols = SegmentColumns(m, es, segment, slots);
  const std::vector<Segment> segments = PlanSegments(count, c, cols);
  const bool wide = acc != Accumulation::kBuffer && dtype == DType::kFloat32;
  const bool feedback = wide && (acc == Accumulation::kFloat64Feedback ||
                                 acc == Accumulation::kFloat64State) &&
                        FeedsBackRounding(N, c);
  const std::size_t row_bytes =
      wide && acc == Accumulation::kFloat64State ? sizeof(double) : es;
  return MakeWorkspaceLayout(N, c, m, es, segments, slots, feedback, row_bytes, 1).bytes();
}

TEST(BenchMemory, NeverBelowTheEngineWorkspaceAndCloseAboveIt) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const int N : {2, 4, 8})
      for (const int c : {1, 4, 8, 24, 32})
        for (const Accumulation acc :
             {Accumulation::kBuffer, Accumulation::kFloat64, Accumulation::kFloat64Feedback,
              Accumulation::kFloat64State})
          for (const std::size_t size : {std::size_t(4) << 10, std::size_t(1) << 20,
                                         std::size_t(3) << 26})
            for (const int slots : {1, 8}) {
              if (dtype == DType::kFloat64 && acc != Accumulation::kBuffer) continue;
              Plan plan;
              plan.options.dtype = dtype;
              plan.algorithms = {"cerar"};
              plan.segments = {std::size_t(1) << 20};
              plan.slots = {slots};
              plan.accumulations = {acc};
              const std::size_t count = size / SizeOf(dtype);
              const double exact =
                  double(EngineWorkspace(N, c, dtype, count, plan.segments[0], slots, acc));
              const double estimate =
                  RankMemoryNeed(plan, {c}, {"d"}, N, size).bytes - double(size);
              const std::string where = "N " + std::to_string(N) + " c " + std::to_string(c) +
                                        " " + ToString(acc) + " size " + std::to_string(size) +
                                        " slots " + std::to_string(slots);
              EXPECT_GE(estimate, exact) << where;
              // Above it only by the feedback rows it counts where c <= 2N (N of c + N rows)
              // and the one slot it counts for the segment cut at the data boundary.
              const double m = double((count + std::size_t(c) - 1) / std::size_t(c));
              const double slot = std::min(double(plan.segments[0]), m * SizeOf(dtype));
              EXPECT_LE(estimate, exact * (1 + double(N) / (c + N)) + slot) << where;
            }
}

TEST(BenchMemory, RefusesWhatTheNodeCannotHoldAndNamesIt) {
  Plan plan;
  plan.options.dtype = DType::kFloat32;
  plan.algorithms = {"cerar", "ring"};
  plan.segments = {std::size_t(1) << 20};
  plan.slots = {8};
  plan.accumulations = {Accumulation::kBuffer};
  const std::size_t size = std::size_t(1) << 30;
  const MemoryNeed need = RankMemoryNeed(plan, {4}, {"eps_N2_c4"}, 2, size);
  EXPECT_EQ(need.what, "cerar:eps_N2_c4");  // 1.5 d against the ring's d / 2
  EXPECT_EQ(MemoryRefusal(need, size, 4, 4 * need.bytes), "");
  EXPECT_EQ(MemoryRefusal(need, size, 4, -1), "");  // unknown: no check
  const std::string refusal = MemoryRefusal(need, size, 4, 4 * need.bytes - 1);
  EXPECT_NE(refusal.find("--sizes up to 1GiB need about 2.5 GiB per rank"), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("4 ranks on this node: 10.0 GiB"), std::string::npos) << refusal;
}

}  // namespace
}  // namespace cerar::bench
