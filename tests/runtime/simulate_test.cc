// Simulate: the numbers `cerar simulate` prints.
#include <gtest/gtest.h>

#include <cmath>

#include "cerar/errors.h"
#include "cerar/runtime/simulate.h"
#include "cases.h"
#include "schedule.h"

namespace cerar {
namespace {

TEST(Simulate, ReportsBytesWorkspaceAndErrors) {
  const int N = 4, c = 8;
  const Design d = test::RandomDesign(N, c, 21);
  SimulateOptions o;
  o.count = 10001;  // not divisible by c or N
  o.dtype = DType::kFloat32;
  const SimulateResult r = Simulate(d, o);
  const std::size_t m = (o.count + c - 1) / c;
  EXPECT_EQ(r.bytes_sent_per_rank, std::uint64_t(c + N - 2) * m * 4);
  EXPECT_EQ(r.ring_bytes_sent_per_rank, 2ull * (N - 1) * ((o.count + N - 1) / N) * 4);
  // 1 MiB segments: m = 1251 columns (5004 bytes per row, below the 64 KiB segment floor) are cut
  // only where the data components drop (at column 10001 mod 1251 = 1244), so two send slots of
  // 1244 elements.
  EXPECT_EQ(r.workspace_bytes, test::CodedWorkspaceBytes(N, c, o.count, 4, o.segment_bytes));
  EXPECT_EQ(r.workspace_bytes, std::size_t(c + N) * m * 4 + 2 * 1244 * 4);
  // (1 + N/c) d elements plus at most kDefaultSendSlots segments.
  EXPECT_LE(r.workspace_bytes,
            (1.0 + double(N) / c) * (c * m) * 4 + kDefaultSendSlots * o.segment_bytes);
  SimulateOptions small = o;
  small.segment_bytes = 64;  // 16 columns: 79 segments, kDefaultSendSlots slots of 16 elements
  const SimulateResult rs = Simulate(d, small);
  EXPECT_EQ(rs.workspace_bytes, std::size_t(c + N) * m * 4 + kDefaultSendSlots * 64);
  EXPECT_EQ(rs.bytes_sent_per_rank, r.bytes_sent_per_rank);
  EXPECT_NEAR(rs.measured_err_rms, r.measured_err_rms, 1e-3 * r.measured_err_rms);
  EXPECT_EQ(r.err_per_rank.size(), std::size_t(N));
  EXPECT_GT(r.measured_err_rms, 0.0);
  EXPECT_LT(r.ring_err, 1e-5);
  EXPECT_GT(r.seconds, 0.0);
  EXPECT_TRUE(std::isnan(r.recorded_err_rms));  // the test design records no figures
}

TEST(Simulate, ExactDesignHasRoundingErrorOnly) {
  const Design d = test::FourierDesign(4, 4);
  SimulateOptions o;
  o.count = 4096;
  o.dtype = DType::kFloat64;
  const SimulateResult r = Simulate(d, o);
  EXPECT_LT(r.measured_err_rms, 1e-14);
  EXPECT_TRUE(std::isnan(r.recorded_err_rms));
}

TEST(Simulate, CountZeroAndBadDType) {
  const Design d = test::RandomDesign(2, 1, 1);
  SimulateOptions o;
  o.count = 0;
  const SimulateResult r = Simulate(d, o);
  EXPECT_EQ(r.bytes_sent_per_rank, 0u);
  EXPECT_EQ(r.measured_err_rms, 0.0);
  o.dtype = DType::kBFloat16;
  EXPECT_THROW(Simulate(d, o), InvalidArgument);
}

}  // namespace
}  // namespace cerar
