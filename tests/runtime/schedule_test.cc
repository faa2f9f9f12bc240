// The per-round schedule, the workspace layout and the segment plan, tested without arithmetic:
// a symbolic run of the ring checks the schedule against the windows of PROTOCOL.md §4, a
// liveness run checks that the layout never overwrites a vector still needed, and a replay of the
// exchanges checks that no send slot is rewritten while its exchange may be in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "cerar/format/design.h"
#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "schedule.h"

namespace cerar {
namespace {

class ScheduleTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

// A vector as integer coefficients of the symbols e_i(t).
using Sym = std::map<std::pair<int, int>, int>;
Sym Add(Sym a, const Sym& b, int sign) {
  for (const auto& [k, v] : b)
    if ((a[k] += sign * v) == 0) a.erase(k);
  return a;
}

TEST_P(ScheduleTest, SymbolicRingGivesTheWindows) {
  const auto [N, c] = GetParam();
  const int L = NumRounds(N, c);
  ASSERT_EQ(L, c + N - 2);
  auto e = [](int i, int t) { return Sym{{{i, t}, 1}}; };
  std::vector<Sym> y_prev(N);  // y_i(t-1)
  std::vector<std::vector<Sym>> obs(N, std::vector<Sym>(c));
  std::vector<std::vector<bool>> obs_written(N, std::vector<bool>(c, false));
  int sends = 0;
  for (int t = 0; t <= L; ++t) {
    const RoundActions a = RoundSchedule(N, c, t);
    EXPECT_EQ(a.t, t);
    std::vector<Sym> x(N);
    for (int i = 0; i < N; ++i) {
      Sym tmp = a.recv_read >= 0 ? y_prev[i] : Sym{};
      if (a.recv_read >= 0) {
        EXPECT_EQ(a.recv_read, t - 1);
      }
      if (a.e_back >= 0) tmp = Add(tmp, e(i, a.e_back), -1);
      if (a.obs >= 0) {
        ASSERT_LT(a.obs, c);
        EXPECT_FALSE(obs_written[i][a.obs]) << "observation " << a.obs << " written twice";
        obs[i][a.obs] = tmp;
        obs_written[i][a.obs] = true;
      }
      if (a.send) x[i] = a.e_now >= 0 ? Add(tmp, e(i, a.e_now), 1) : tmp;
    }
    if (a.send) {
      ++sends;
      for (int i = 0; i < N; ++i) y_prev[(i + 1) % N] = x[i];
    }
  }
  EXPECT_EQ(sends, L);  // §9: every rank sends exactly L vectors
  for (int j = 0; j < N; ++j)
    for (int r = 0; r < c; ++r) {
      ASSERT_TRUE(obs_written[j][r]);
      Sym expect;
      for (int i = 0; i < N; ++i) {
        if (i == j) continue;
        // W_ij[r, :] = E_i[N-2+r-s_ij, :]
        expect = Add(expect, e(i, N - 2 + r - HopOffset(i, j, N)), 1);
      }
      EXPECT_EQ(obs[j][r], expect) << "rank " << j << " observation " << r;
    }
}

// Labels of what a workspace row holds.
enum Kind { kNone, kE, kY, kO };
using Label = std::pair<Kind, int>;

TEST_P(ScheduleTest, WorkspaceLayoutNeverOverwritesLiveVectors) {
  const auto [N, c] = GetParam();
  const WorkspaceLayout w = MakeWorkspaceLayout(N, c);
  const int L = w.L;
  EXPECT_EQ(w.rows(), c + N);  // L + 2: x(t) lives in the send slots, not in a row
  std::vector<Label> row(w.rows(), {kNone, 0});
  for (int t = 0; t < L; ++t) {
    ASSERT_LT(w.enc_row(t), w.rows());
    row[w.enc_row(t)] = {kE, t};
  }
  // e(t') is needed after step t iff it is read later: at t' (> t) or at t' + N (> t, <= L).
  // N by copy: clang 14 (the sanitizer job) cannot capture a structured binding by reference.
  auto e_needed_after = [&, N = N](int tp, int t) { return tp > t || (tp + N > t && tp + N <= L); };
  for (int t = 0; t <= L; ++t) {
    const RoundActions a = RoundSchedule(N, c, t);
    if (a.recv_read >= 0) {
      EXPECT_EQ(row[w.recv_row(a.recv_read)], Label(kY, a.recv_read));
    }
    if (a.e_now >= 0) {
      EXPECT_EQ(row[w.enc_row(a.e_now)], Label(kE, a.e_now));
    }
    if (a.e_back >= 0) {
      EXPECT_EQ(row[w.enc_row(a.e_back)], Label(kE, a.e_back));
    }
    if (a.obs >= 0) {
      ASSERT_GE(a.recv_read, 0);
      EXPECT_EQ(w.obs_row(a.obs), w.recv_row(a.recv_read)) << "observation is made in place";
      row[w.obs_row(a.obs)] = {kO, a.obs};
    }
    if (a.send) {
      const Label victim = row[w.recv_row(t)];
      EXPECT_NE(victim.first, kO) << "round " << t << " receives over an observation";
      if (victim.first == kE) {
        EXPECT_FALSE(e_needed_after(victim.second, t))
            << "round " << t << " overwrites e(" << victim.second << ")";
      }
      row[w.recv_row(t)] = {kY, t};
    }
  }
  for (int r = 0; r < c; ++r) EXPECT_EQ(row[w.obs_row(r)], Label(kO, r));
}

// The send slots, replayed segment by segment in the engine's order (exchange i = t·S + s): the
// engine waits for exchange i - send_slots before writing slot send_slot(i), so exchanges
// i - send_slots + 1 … i - 1 may still be in flight; none of them may use the same slot, and
// every slot must hold every segment. Byte ranges: rows, then slots, nothing overlapping.
TEST_P(ScheduleTest, SendSlotsNeverOverwriteAnExchangeInFlight) {
  const auto [N, c] = GetParam();
  for (std::size_t count : {std::size_t(1), std::size_t(c - 1 > 0 ? c - 1 : 1), std::size_t(7),
                            std::size_t(1003), std::size_t(20011)})
    for (std::size_t max_cols : {1, 2, 3, 5, 1 << 18})
      for (std::size_t es : {4, 8})
      for (int slots : {1, 2, 3, 8, 33}) {
        const std::size_t m = (count + c - 1) / c;
        const auto segs = PlanSegments(count, c, max_cols);
        const WorkspaceLayout w = MakeWorkspaceLayout(N, c, m, es, segs, slots);
        const std::size_t S = segs.size();
        std::size_t max_seg = 0;
        for (const Segment& sg : segs) max_seg = std::max(max_seg, sg.cols);
        const int K = static_cast<int>(std::min<std::size_t>(slots, S));
        ASSERT_EQ(w.send_slots, K);
        ASSERT_EQ(w.slot_bytes, max_seg * es);
        EXPECT_EQ(w.bytes(), std::size_t(c + N) * m * es + K * max_seg * es);
        // The documented bound: (1 + N/c) d elements plus send_slots segments.
        EXPECT_LE(w.bytes(), std::size_t(c + N) * m * es + slots * max_cols * es);
        EXPECT_EQ(w.row_offset(w.rows()), std::size_t(c + N) * m * es);
        for (int k = 0; k < K; ++k) {
          EXPECT_GE(w.slot_offset(k), w.row_offset(w.rows()));  // after every row
          EXPECT_LE(w.slot_offset(k) + w.slot_bytes, w.bytes());
          if (k) {
            EXPECT_EQ(w.slot_offset(k), w.slot_offset(k - 1) + w.slot_bytes);
          }
        }
        const std::size_t exchanges = std::size_t(w.L) * S;
        std::vector<std::size_t> last_user(K, SIZE_MAX);
        for (std::size_t i = 0; i < exchanges; ++i) {
          const int k = w.send_slot(i);
          ASSERT_GE(k, 0);
          ASSERT_LT(k, K);
          // Completed when the engine writes slot k: every exchange <= i - K.
          if (last_user[k] != SIZE_MAX) {
            ASSERT_LE(last_user[k] + K, i) << "exchange " << i << " overwrites slot " << k
                                           << " of exchange " << last_user[k] << " in flight";
          }
          ASSERT_LE(segs[i % S].cols * es, w.slot_bytes);
          last_user[k] = i;
        }
      }
  EXPECT_THROW(MakeWorkspaceLayout(N, c, 0, 4, {}, 3).send_slot(0), InvalidArgument);
  EXPECT_EQ(MakeWorkspaceLayout(N, c, 0, 4, {}, 3).bytes(), 0u);
  EXPECT_THROW(MakeWorkspaceLayout(N, c, 10, 4, {{0, 10, 1}}, 0), InvalidArgument);
}

// The encoder plan: row 0 before step 0's send, every other row exactly once after some step's
// send, each before the step that reads it (e(t) at step t), so all of them before step L, the
// decode that writes the caller's buffer (which the encoder reads).
void ExpectEncoderRowsReadyBeforeUse(int N, int c, int B) {
  SCOPED_TRACE("block_rows " + std::to_string(B));
  const int L = NumRounds(N, c);
  std::vector<int> done_at(L, -1);
  done_at[0] = -1;  // before step 0's Step (and send)
  std::vector<int> times(L, 0);
  times[0] = 1;
  for (int t = 0; t <= L; ++t) {
    const RowRange r = EncodeRowsAfterSend(N, c, t, B);
    ASSERT_GE(r.count, 0);
    if (r.count == 0) continue;
    EXPECT_LT(t, L) << "rows encoded at step " << t << ", the decode step";
    ASSERT_GE(r.first, 1);
    ASSERT_LE(r.first + r.count, L);
    for (int row = r.first; row < r.first + r.count; ++row) {
      ++times[row];
      done_at[row] = t;
    }
  }
  for (int row = 0; row < L; ++row) {
    EXPECT_EQ(times[row], 1) << "row " << row;
    // Read first by step `row` (e_now), after the encode of step done_at[row] completed.
    EXPECT_LT(done_at[row], row) << "e(" << row << ") is not ready for step " << row;
    const RoundActions a = RoundSchedule(N, c, row);
    EXPECT_EQ(a.e_now, row);
    // Its workspace row is not written for y or o from its encode to the step that reads it
    // (y(t), posted at step t, may land while step t encodes; earlier ones have been waited for).
    const WorkspaceLayout ws = MakeWorkspaceLayout(N, c);
    for (int t = std::max(done_at[row], 0); t <= row; ++t) {
      const RoundActions at = RoundSchedule(N, c, t);
      if (at.send) {
        EXPECT_NE(ws.recv_row(t), ws.enc_row(row)) << "y(" << t << "), e(" << row << ")";
      }
      if (at.obs >= 0) {
        EXPECT_NE(ws.obs_row(at.obs), ws.enc_row(row)) << "step " << t;
      }
    }
  }
  EXPECT_THROW(EncodeRowsAfterSend(N, c, L + 1, B), InvalidArgument);
}

TEST_P(ScheduleTest, EncoderRowsAreReadyBeforeUse) {
  const auto [N, c] = GetParam();
  for (int B : {1, 2, 3, kEncodeBlockRows, 1000}) ExpectEncoderRowsReadyBeforeUse(N, c, B);
}

INSTANTIATE_TEST_SUITE_P(NC, ScheduleTest,
                         ::testing::Values(std::make_tuple(2, 1), std::make_tuple(2, 2),
                                           std::make_tuple(2, 5), std::make_tuple(3, 1),
                                           std::make_tuple(3, 2), std::make_tuple(4, 3),
                                           std::make_tuple(4, 4), std::make_tuple(4, 8),
                                           std::make_tuple(5, 7), std::make_tuple(8, 16),
                                           std::make_tuple(7, 30)),
                         [](const auto& param_info) {
                           return "N" + std::to_string(std::get<0>(param_info.param)) + "_c" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

TEST(Schedule, RejectsBadArguments) {
  EXPECT_THROW(RoundSchedule(1, 3, 0), InvalidArgument);
  EXPECT_THROW(RoundSchedule(4, 0, 0), InvalidArgument);
  EXPECT_THROW(RoundSchedule(4, 3, -1), InvalidArgument);
  EXPECT_THROW(RoundSchedule(4, 3, 6), InvalidArgument);  // L = 5
  EXPECT_THROW(MakeWorkspaceLayout(4, 3).recv_row(5), InvalidArgument);
  EXPECT_THROW(MakeWorkspaceLayout(4, 3, 5, 4, {{3, 3, 1}}, 3), InvalidArgument);  // past column 5
}

TEST(Schedule, EncoderPlanByHand) {
  // N = 4, c = 8: L = 10. One row per block: step t encodes e(t+1), steps 9 and 10 nothing.
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 0, 1).first, 1);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 0, 1).count, 1);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 8, 1).first, 9);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 9, 1).count, 0);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 10, 1).count, 0);
  // Blocks of 4: e(1) … e(4) at step 0, e(5) … e(8) at step 4, e(9) at step 8.
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 0, 4).count, 4);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 1, 4).count, 0);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 4, 4).first, 5);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 4, 4).count, 4);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 8, 4).first, 9);
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 8, 4).count, 1);
  // The default: all of e(1) … e(9) at step 0.
  EXPECT_EQ(EncodeRowsAfterSend(4, 8, 0).count, 9);
  EXPECT_THROW(EncodeRowsAfterSend(4, 8, 0, 0), InvalidArgument);
  // N = 2, c = 1: L = 1, nothing after the send.
  EXPECT_EQ(EncodeRowsAfterSend(2, 1, 0).count, 0);
}

TEST(Schedule, FirstAndLastRoundsByHand) {
  // N = 4, c = 3: L = 5. Round 0 sends e(0); round 3 is the first observation (o(2));
  // round 4 subtracts e(0); round 5 only finishes o(4).
  RoundActions a = RoundSchedule(4, 3, 0);
  EXPECT_EQ(a.recv_read, -1);
  EXPECT_EQ(a.e_now, 0);
  EXPECT_EQ(a.e_back, -1);
  EXPECT_EQ(a.obs, -1);
  EXPECT_TRUE(a.send);
  a = RoundSchedule(4, 3, 3);
  EXPECT_EQ(a.obs, 0);
  EXPECT_EQ(a.e_back, -1);
  a = RoundSchedule(4, 3, 4);
  EXPECT_EQ(a.e_back, 0);
  EXPECT_EQ(a.obs, 1);
  a = RoundSchedule(4, 3, 5);
  EXPECT_FALSE(a.send);
  EXPECT_EQ(a.e_now, -1);
  EXPECT_EQ(a.e_back, 1);
  EXPECT_EQ(a.obs, 2);
}

TEST(Segments, CoverColumnsWithTheRightComponentCount) {
  for (int c : {1, 2, 3, 4, 7, 16})
    for (std::size_t count : {0, 1, 2, 3, 5, 7, 15, 16, 17, 100, 1001})
      for (std::size_t max_cols : {1, 2, 3, 1000}) {
        const auto segs = PlanSegments(count, c, max_cols);
        const std::size_t m = (count + c - 1) / c;
        std::size_t next = 0;
        for (const Segment& s : segs) {
          ASSERT_EQ(s.col0, next);
          ASSERT_GE(s.cols, 1u);
          ASSERT_LE(s.cols, max_cols);
          for (std::size_t col = s.col0; col < s.col0 + s.cols; ++col) {
            int kc = 0;
            for (int k = 0; k < c; ++k)
              if (k * m + col < count) kc = k + 1;
            ASSERT_EQ(s.kc, kc) << "count " << count << " c " << c << " col " << col;
          }
          next += s.cols;
        }
        EXPECT_EQ(next, m);
      }
  EXPECT_THROW(PlanSegments(10, 0, 4), InvalidArgument);
  EXPECT_THROW(PlanSegments(10, 2, 0), InvalidArgument);
}

// SegmentColumns by hand: the largest segment caps it, a round smaller than `slots` largest
// segments is cut into `slots` pieces, never below kMinSegmentBytes unless segment_bytes is.
TEST(Segments, WidthFollowsTheWindow) {
  const std::size_t MiB = std::size_t{1} << 20, floor4 = kMinSegmentBytes / 4;
  // A 64 MiB round of float32 (m = 16 Mi columns): 1 MiB segments.
  EXPECT_EQ(SegmentColumns(16 * MiB, 4, MiB, 8), MiB / 4);
  // A 2 MiB round (m = 512 Ki columns) with 8 slots: 8 segments of 256 KiB.
  EXPECT_EQ(SegmentColumns(512 * 1024, 4, MiB, 8), 64u * 1024);
  // ... with 3 slots: ceil(m / 3) columns, 3 segments.
  EXPECT_EQ(SegmentColumns(512 * 1024, 4, MiB, 3), (512u * 1024 + 2) / 3);
  EXPECT_EQ(PlanSegments(512 * 1024 * 8, 8, SegmentColumns(512 * 1024, 4, MiB, 3)).size(), 3u);
  // A 128 KiB round with 8 slots: the 64 KiB floor, 2 segments.
  EXPECT_EQ(SegmentColumns(32 * 1024, 4, MiB, 8), floor4);
  // Rounds below the floor stay whole; segment_bytes below the floor wins (tests use 4 bytes).
  EXPECT_EQ(SegmentColumns(1000, 4, MiB, 8), floor4);
  EXPECT_EQ(PlanSegments(8000, 8, SegmentColumns(1000, 4, MiB, 8)).size(), 1u);
  EXPECT_EQ(SegmentColumns(1000, 4, 4, 8), 1u);
  EXPECT_EQ(SegmentColumns(1000, 8, 64, 1), 8u);
  EXPECT_EQ(SegmentColumns(0, 4, MiB, 8), floor4);
  EXPECT_THROW(SegmentColumns(100, 8, 4, 3), InvalidArgument);   // below one element
  EXPECT_THROW(SegmentColumns(100, 4, MiB, 0), InvalidArgument);  // no slot
}

// A device back end's layout (kDeviceAlignBytes): rows and send slots padded to 16 bytes, the
// segment width a multiple of 16 bytes, and every segment after the column where kc drops
// starting on a multiple too; the cover of [0, m), the kc per column and the bound on the
// segment width are those of the unaligned plan.
TEST(Segments, DeviceAlignment) {
  EXPECT_EQ(SegmentColumns(512 * 1024, 4, std::size_t{1} << 20, 3, 4), (512u * 1024 + 2) / 3 + 1);
  EXPECT_EQ(SegmentColumns(1000, 4, 4, 8, 4), 1u);    // no multiple fits: unchanged
  EXPECT_EQ(SegmentColumns(1000, 4, 24, 8, 4), 4u);   // 6 columns: down to 4
  for (const int c : {1, 3, 7})
    for (const std::size_t count : {std::size_t(1), std::size_t(13), std::size_t(13003),
                                    std::size_t(20011)})
      for (const std::size_t es : {std::size_t(2), std::size_t(4), std::size_t(8)}) {
        const std::size_t m = (count + c - 1) / c, align = 16 / es;
        const std::size_t width = SegmentColumns(m, es, 4096, kDefaultSendSlots, align);
        const auto plain = PlanSegments(count, c, width);
        const auto segs = PlanSegments(count, c, width, align);
        EXPECT_LE(segs.size(), plain.size() + 1);
        std::vector<int> kc_plain(m), kc(m);
        for (const Segment& s : plain)
          for (std::size_t col = s.col0; col < s.col0 + s.cols; ++col) kc_plain[col] = s.kc;
        std::size_t next = 0, off_grid = 0;
        for (const Segment& s : segs) {
          ASSERT_EQ(s.col0, next);
          ASSERT_GE(s.cols, 1u);
          ASSERT_LE(s.cols, width);
          off_grid += s.col0 % align != 0;
          for (std::size_t col = s.col0; col < s.col0 + s.cols; ++col) kc[col] = s.kc;
          next += s.cols;
        }
        EXPECT_EQ(next, m);
        EXPECT_EQ(kc, kc_plain) << "c " << c << ", count " << count;
        EXPECT_LE(off_grid, 1u) << "only the segment at the kc drop may start off the grid";
        for (const std::size_t row_es : {es, std::size_t(8)}) {
          const WorkspaceLayout w =
              MakeWorkspaceLayout(3, c, m, es, segs, kDefaultSendSlots, false, row_es, 16);
          EXPECT_GE(w.stride, m);
          EXPECT_LT((w.stride - m) * row_es, 16u);
          EXPECT_EQ(w.row_offset(1) % 16, 0u);
          EXPECT_EQ(w.slot_offset(0) % 16, 0u);
          EXPECT_EQ(w.slot_bytes % 16, 0u);
        }
      }
  EXPECT_THROW(MakeWorkspaceLayout(3, 2, 10, 4, {{0, 10, 2}}, 8, false, 4, 12), InvalidArgument);
  EXPECT_THROW(MakeWorkspaceLayout(3, 2, 10, 4, {{0, 10, 2}}, 8, false, 8, 4), InvalidArgument);
  EXPECT_EQ(MakeWorkspaceLayout(3, 2, 10, 4, {{0, 10, 2}}, 8).stride, 10u);  // host: unpadded
}

// The workspace table of docs/runtime.md: N = 8, c = 16, 10^6 float32 (m = 62 500 columns),
// the default window, segment_bytes 1 MiB, 64 KiB, 4 KiB and 8 bytes.
TEST(WorkspaceLayout, DocsTableAtTheDefaultWindow) {
  const int N = 8, c = 16;
  const std::size_t count = 1000000, m = count / c, es = 4;
  struct Row {
    std::size_t segment_bytes, segments;
    int slots;
    std::size_t bytes;
  };
  ASSERT_EQ(kDefaultSendSlots, 8) << "docs/runtime.md's table is for 8 send slots";
  for (const Row& row : {Row{std::size_t{1} << 20, 4, 4, 6262144}, Row{65536, 4, 4, 6262144},
                         Row{4096, 62, 8, 6032768}, Row{8, 31250, 8, 6000064}}) {
    SCOPED_TRACE(row.segment_bytes);
    const auto segments =
        PlanSegments(count, c, SegmentColumns(m, es, row.segment_bytes, kDefaultSendSlots));
    EXPECT_EQ(segments.size(), row.segments);
    const WorkspaceLayout w = MakeWorkspaceLayout(N, c, m, es, segments, kDefaultSendSlots);
    EXPECT_EQ(w.send_slots, row.slots);
    EXPECT_EQ(w.bytes(), row.bytes);
  }
}

}  // namespace
}  // namespace cerar
