// The coded all-reduce on N threads (in-process transport): every rank's output equals
// g_j + sum_{i != j} D_j W_ij g_i to rounding (random encoders, least-squares decoders), exact
// designs give the exact sum, bytes sent are L ceil(n/c) sizeof(T) exactly, the workspace is
// (L + 2) m elements plus at most send_slots segments, no send slot is rewritten while its
// exchange is in flight, at most send_slots exchanges are in flight, the transport is given
// Progress calls between blocks of arithmetic, and the measured error reproduces err_rms for
// c > N.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "cases.h"
#include "checking_transport.h"
#include "cerar/errors.h"
#include "cerar/runtime/inprocess.h"
#include "cerar/runtime/simulate.h"

namespace cerar {
namespace {

using test::CheckingTransport;
using test::RankOutcome;

struct Case {
  int N, c;
  std::size_t count;
  bool f32;
  std::size_t segment_bytes;
  int slots = kDefaultSendSlots;
};

std::string Label(const Case& p) {
  return "N" + std::to_string(p.N) + "_c" + std::to_string(p.c) + "_n" + std::to_string(p.count) +
         (p.f32 ? "_f32" : "_f64") + "_seg" + std::to_string(p.segment_bytes) + "_K" +
         std::to_string(p.slots);
}
std::string Name(const ::testing::TestParamInfo<Case>& info) { return Label(info.param); }
void PrintTo(const Case& p, std::ostream* os) { *os << Label(p); }

std::vector<Case> Cases() {
  std::vector<Case> out;
  const std::pair<int, int> nc[] = {{2, 1}, {2, 3}, {3, 2}, {3, 5}, {4, 3},
                                    {4, 4}, {4, 8}, {5, 7}, {8, 16}};
  for (auto [N, c] : nc) {
    std::vector<std::pair<std::size_t, std::size_t>> counts = {
        {0, 1 << 20}, {1, 1 << 20}, {7, 1 << 20}, {1003, 64}, {20011, 4096}};
    if (c > 2 && c - 1 != 7) counts.push_back({std::size_t(c - 1), 1 << 20});  // fewer than c
    for (auto [n, seg] : counts)
      for (bool f32 : {false, true}) out.push_back({N, c, n, f32, seg});
    // Tiny segments (one or two columns): hundreds to thousands of exchanges through the send
    // slots; windows of 1 (no pipelining), 2, the default and 17 slots.
    for (std::size_t n : std::set<std::size_t>{0, 1, 7, std::size_t(c - 1), 1003, 20011}) {
      out.push_back({N, c, n, true, 4});
      out.push_back({N, c, n, true, 8});
      out.push_back({N, c, n, false, 8});
      for (int k : {1, 2, 17}) out.push_back({N, c, n, true, 4, k});
    }
  }
  // Rounds of more than one default segment (1 MiB): every count above is one segment there.
  const std::size_t seg = AllReduceOptions{}.segment_bytes;
  for (auto [N, c] : {std::pair{2, 1}, std::pair{3, 5}, std::pair{4, 8}})
    out.push_back({N, c, std::size_t(c) * (seg / 4 + 1) + 3, true, seg});
  return out;
}

class CodedAllReduceTest : public ::testing::TestWithParam<Case> {};

template <typename T>
std::vector<RankOutcome> RunAll(const Design& d, std::size_t count, std::size_t seg,
                                ReduceOp op = ReduceOp::kSum, int slots = kDefaultSendSlots) {
  std::vector<RankOutcome> out(d.N());
  InProcessOptions o;
  o.timeout_s = 60;
  auto errors = RunInProcess(d.N(), [&](Transport& tr) {
    // The in-process transport copies a send at once, so only the checker sees a slot that is
    // rewritten while its exchange is in flight.
    CheckingTransport ck(tr);
    out[tr.rank()] = test::CodedCase<T>(ck, d, count, 11, seg, op, slots);
    EXPECT_EQ(ck.overlaps, 0) << "rank " << tr.rank();
    EXPECT_EQ(ck.redundant_waits, 0) << "rank " << tr.rank();
    EXPECT_LE(ck.max_in_flight, std::size_t(slots)) << "rank " << tr.rank();
    EXPECT_EQ(ck.completed(), ck.started()) << "rank " << tr.rank();
    EXPECT_EQ(ck.finish_calls, count == 0 ? 0u : 1u) << "rank " << tr.rank();
  }, o);
  for (auto& e : errors)
    if (e) ADD_FAILURE() << ExceptionMessage(e);
  return out;
}

TEST_P(CodedAllReduceTest, EveryRankMatchesTheWindowFormula) {
  const Case p = GetParam();
  const Design d = test::RandomDesign(p.N, p.c, 1000 + p.N * 64 + p.c);
  const auto out = p.f32 ? RunAll<float>(d, p.count, p.segment_bytes, ReduceOp::kSum, p.slots)
                         : RunAll<double>(d, p.count, p.segment_bytes, ReduceOp::kSum, p.slots);
  const std::size_t m = (p.count + p.c - 1) / p.c;
  const std::size_t es = p.f32 ? 4 : 8;
  for (int j = 0; j < p.N; ++j) {
    const RankOutcome& r = out[j];
    EXPECT_LE(r.err, r.tol * r.scale) << "rank " << j << ": error " << r.err << ", scale "
                                      << r.scale;
    EXPECT_EQ(r.bytes, r.expected_bytes) << "rank " << j;
    EXPECT_EQ(r.bytes, std::uint64_t(p.N + p.c - 2) * m * es);
    // Workspace: (L + 2) m elements = (1 + N/c) d, plus min(send_slots, S) slots of the largest
    // segment: at most send_slots · segment_bytes over (1 + N/c) d.
    EXPECT_EQ(r.workspace, r.expected_workspace);
    EXPECT_LE(r.workspace, std::size_t(p.c + p.N) * m * es + p.slots * p.segment_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, CodedAllReduceTest, ::testing::ValuesIn(Cases()), Name);

class SendSlotsTest : public ::testing::TestWithParam<int> {};

TEST_P(SendSlotsTest, AreReusedOnlyAfterTheirExchangeCompletes) {
  const int slots = GetParam();
  for (auto [N, c] : {std::pair{2, 1}, std::pair{3, 5}, std::pair{4, 3}, std::pair{8, 16}})
    for (std::size_t count : {std::size_t(1), std::size_t(7), std::size_t(1003),
                              std::size_t(20011)})
      for (std::size_t seg : {std::size_t(4), std::size_t(8), std::size_t(12),
                              std::size_t(1) << 20}) {
        const Design d = test::RandomDesign(N, c, 300 + N * 64 + c);
        std::vector<RankOutcome> out(N);
        std::vector<int> overlaps(N), redundant(N);
        std::vector<std::size_t> in_flight(N), started(N), completed(N), progress(N);
        InProcessOptions o;
        o.timeout_s = 60;
        auto errors = RunInProcess(N, [&](Transport& tr) {
          CheckingTransport ck(tr);
          const int j = tr.rank();
          out[j] = test::CodedCase<float>(ck, d, count, 5, seg, ReduceOp::kSum, slots);
          overlaps[j] = ck.overlaps;
          redundant[j] = ck.redundant_waits;
          in_flight[j] = ck.max_in_flight;
          started[j] = ck.started();
          completed[j] = ck.completed();
          progress[j] = ck.progress_calls;
        }, o);
        const std::string what = "N " + std::to_string(N) + " c " + std::to_string(c) +
                                 " count " + std::to_string(count) + " seg " + std::to_string(seg);
        for (auto& e : errors) ASSERT_FALSE(e) << what << ": " << ExceptionMessage(e);
        const std::size_t m = (count + c - 1) / c;
        const auto segs = PlanSegments(count, c, SegmentColumns(m, 4, seg, slots));
        const std::size_t S = segs.size();
        for (int j = 0; j < N; ++j) {
          EXPECT_EQ(overlaps[j], 0) << what << " rank " << j;
          EXPECT_EQ(redundant[j], 0) << what << " rank " << j;
          EXPECT_LE(in_flight[j], std::size_t(slots)) << what << " rank " << j;
          EXPECT_EQ(started[j], std::size_t(d.L()) * S) << what << " rank " << j;
          EXPECT_EQ(completed[j], started[j]) << what << " rank " << j;
          // At least one Progress after the encode of each segment and after each of its L + 1
          // steps (more when a segment spans several blocks).
          EXPECT_GE(progress[j], std::size_t(d.L() + 2) * S) << what << " rank " << j;
          EXPECT_LE(out[j].err, out[j].tol * out[j].scale) << what << " rank " << j;
          EXPECT_EQ(out[j].workspace, out[j].expected_workspace) << what << " rank " << j;
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Slots, SendSlotsTest, ::testing::Values(1, 2, 3, 8, 16),
                         [](const auto& info) { return "K" + std::to_string(info.param); });

// Exact designs: the real Fourier basis with c <= N (eps construction, r* = 0) gives the exact
// sum to float rounding.
class ExactDesignTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ExactDesignTest, GivesTheExactSum) {
  const auto [N, c] = GetParam();
  const Design d = test::FourierDesign(N, c);
  ASSERT_LT(test::MaxExactnessDefect(d), 1e-12) << "the test design itself is not exact";
  for (std::size_t count : {std::size_t(1), std::size_t(999), std::size_t(4096)}) {
    std::vector<double> err(N), scale(N);
    // N by copy: clang 14 (the sanitizer job) cannot capture a structured binding by reference.
    auto errors = RunInProcess(N, [&, N = N](Transport& tr) {
      const auto g = test::Inputs<float>(N, count, 3);
      std::vector<float> buf = g[tr.rank()];
      auto be = CreateCpuBackend();
      CodedAllReduce ar(d, tr, *be, count, {});
      ar.Run(buf.data());
      std::vector<long double> exact(count, 0.0L);
      for (const auto& gi : g)
        for (std::size_t k = 0; k < count; ++k) exact[k] += gi[k];
      err[tr.rank()] = test::DiffNorm(buf, exact);
      double sc = 0;
      for (const auto& gi : g) sc += test::DiffNorm(gi, std::vector<long double>(count, 0.0L));
      scale[tr.rank()] = sc;
    });
    for (auto& e : errors) ASSERT_FALSE(e) << ExceptionMessage(e);
    const double kappa = 2.5;  // kappa_dec of these designs is <= 2.41 (PROTOCOL.md §7)
    for (int j = 0; j < N; ++j)
      EXPECT_LE(err[j], kappa * test::CodedTolerance(d, 0x1p-24) * scale[j])
          << "rank " << j << " count " << count;
  }
}

INSTANTIATE_TEST_SUITE_P(Fourier, ExactDesignTest,
                         ::testing::Values(std::make_tuple(2, 1), std::make_tuple(2, 2),
                                           std::make_tuple(3, 3), std::make_tuple(4, 3),
                                           std::make_tuple(4, 4), std::make_tuple(5, 3),
                                           std::make_tuple(5, 5), std::make_tuple(8, 7)));

TEST(CodedAllReduce, AverageDividesByN) {
  const Design d = test::RandomDesign(3, 5, 9);
  for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(1001)}) {
    for (const auto& r : RunAll<double>(d, count, 256, ReduceOp::kAverage))
      EXPECT_LE(r.err, r.tol * r.scale) << "f64, count " << count;
    for (const auto& r : RunAll<float>(d, count, 256, ReduceOp::kAverage))
      EXPECT_LE(r.err, r.tol * r.scale) << "f32, count " << count;
  }
}

// For c > N the design is approximate: on i.i.d. inputs the relative error ||S_hat_j - S|| / ||S||
// of every rank j reproduces that rank's err_rms (PROTOCOL.md §5) within 2 %. They agree to
// 0.3 % here; 20 % let a measure normalised by ||S - g_j|| instead of ||S|| pass for N >= 4
// (+15 %, +12 %).
class ErrRmsTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ErrRmsTest, MeasuredErrorMatchesErrRms) {
  const auto [N, c] = GetParam();
  const Design d = test::RandomDesign(N, c, 77);
  // err_rms of each rank from the definition (the test design records no figures).
  std::vector<double> predicted(N);
  for (int j = 0; j < N; ++j) {
    double f2 = 0;
    for (int i = 0; i < N; ++i)
      if (i != j)
        f2 += (d.decoder(j) * test::Window(d.encoders(), N, c, i, j) -
               MatrixXd::Identity(c, c)).squaredNorm();
    predicted[j] = std::sqrt(f2 / (N * c));
    ASSERT_GT(predicted[j], 1e-3) << "random designs with c > N are approximate (rank " << j
                                  << ")";
  }
  SimulateOptions o;
  o.count = std::size_t(c) * 40000;
  o.dtype = DType::kFloat64;
  o.seed = 5;
  o.run_ring = false;
  const SimulateResult r = Simulate(d, o);
  ASSERT_EQ(r.err_per_rank.size(), std::size_t(N));
  for (int j = 0; j < N; ++j)
    EXPECT_NEAR(r.err_per_rank[j], predicted[j], 0.02 * predicted[j]) << "rank " << j;
  EXPECT_DOUBLE_EQ(r.measured_err_rms, *std::max_element(r.err_per_rank.begin(),
                                                         r.err_per_rank.end()));
  EXPECT_TRUE(std::isnan(r.recorded_err_rms)) << "nothing recorded, nothing reported";
}

INSTANTIATE_TEST_SUITE_P(RandomDesigns, ErrRmsTest,
                         ::testing::Values(std::make_tuple(3, 5), std::make_tuple(4, 8),
                                           std::make_tuple(5, 7)));

}  // namespace
}  // namespace cerar
