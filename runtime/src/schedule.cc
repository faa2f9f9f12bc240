// Pure schedule functions: see schedule.h and the derivation in coded_allreduce.cc.
#include "schedule.h"

#include <algorithm>
#include <string>

#include "cerar/errors.h"
#include "checked_size.h"

namespace cerar {
namespace {
void CheckNc(int N, int c) {
  if (N < 2) throw InvalidArgument("schedule: N = " + std::to_string(N) + ", expected N >= 2");
  if (c < 1) throw InvalidArgument("schedule: c = " + std::to_string(c) + ", expected c >= 1");
}
}  // namespace

int NumRounds(int N, int c) {
  CheckNc(N, c);
  return c + N - 2;
}

RoundActions RoundSchedule(int N, int c, int t) {
  const int L = NumRounds(N, c);
  if (t < 0 || t > L)
    throw InvalidArgument("schedule: round t = " + std::to_string(t) + " outside [0, L = " +
                          std::to_string(L) + "] for N = " + std::to_string(N) +
                          ", c = " + std::to_string(c));
  RoundActions a;
  a.t = t;
  a.recv_read = t >= 1 ? t - 1 : -1;      // y(-1) = 0
  a.e_now = t < L ? t : -1;               // e(t) = 0 for t >= L
  a.e_back = t - N >= 0 ? t - N : -1;     // e(t-N) = 0 for t < N; t-N <= c-2 < L always
  a.obs = (t - 1 >= N - 2) ? t - 1 - (N - 2) : -1;  // o(t-1) for t-1 in [N-2, L-1]
  a.send = t < L;
  return a;
}

RowRange EncodeRowsAfterSend(int N, int c, int t, int block_rows) {
  const int L = NumRounds(N, c);
  if (t < 0 || t > L)
    throw InvalidArgument("schedule: round t = " + std::to_string(t) + " outside [0, L = " +
                          std::to_string(L) + "]");
  if (block_rows < 1)
    throw InvalidArgument("schedule: block_rows = " + std::to_string(block_rows) +
                          ", expected >= 1");
  if (t % block_rows != 0 || t + 1 >= L) return {};
  return RowRange{t + 1, std::min(block_rows, L - 1 - t)};
}

int WorkspaceLayout::recv_row(int t) const {
  if (t < 0 || t >= L)
    throw InvalidArgument("workspace: y(" + std::to_string(t) + ") outside rounds [0, " +
                          std::to_string(L) + ")");
  if (t >= N) return enc_row(t - N);  // e(t-N) was read by this round's step: reuse its row
  if (t == N - 1) return 1;
  return 0;  // y(0) … y(N-2) share row 0: each is consumed before the next one arrives
}

int WorkspaceLayout::send_slot(std::size_t exchange) const {
  if (send_slots <= 0)
    throw InvalidArgument("workspace: no send slots (no segments) for exchange " +
                          std::to_string(exchange));
  return static_cast<int>(exchange % static_cast<std::size_t>(send_slots));
}

int WorkspaceLayout::feedback_row(int t) const {
  if (feedback_rows <= 0)
    throw InvalidArgument("workspace: no feedback rows (round " + std::to_string(t) + ")");
  if (t < 0 || t > L)
    throw InvalidArgument("workspace: round " + std::to_string(t) + " outside [0, L = " +
                          std::to_string(L) + "]");
  return rows() + t % N;  // written at round t, read at t + N: one row serves both
}

WorkspaceLayout MakeWorkspaceLayout(int N, int c) {
  WorkspaceLayout w;
  w.N = N;
  w.c = c;
  w.L = NumRounds(N, c);
  return w;
}

WorkspaceLayout MakeWorkspaceLayout(int N, int c, std::size_t m, std::size_t elem_bytes,
                                    const std::vector<Segment>& segments, int max_slots,
                                    bool feedback, std::size_t row_elem_bytes,
                                    std::size_t align_bytes) {
  if (max_slots < 1)
    throw InvalidArgument("workspace: " + std::to_string(max_slots) +
                          " send slots, expected >= 1");
  if (row_elem_bytes == 0) row_elem_bytes = elem_bytes;
  if (row_elem_bytes < elem_bytes)
    throw InvalidArgument("workspace: rows of " + std::to_string(row_elem_bytes) +
                          " bytes per element cannot hold packets of " +
                          std::to_string(elem_bytes) + " bytes per element");
  if (align_bytes == 0 || (align_bytes & (align_bytes - 1)) != 0 ||
      (align_bytes > 1 && (align_bytes % elem_bytes != 0 || align_bytes % row_elem_bytes != 0)))
    throw InvalidArgument("workspace: alignment " + std::to_string(align_bytes) +
                          " bytes, expected a power of two that elements of " +
                          std::to_string(elem_bytes) + " and " + std::to_string(row_elem_bytes) +
                          " bytes divide");
  WorkspaceLayout w = MakeWorkspaceLayout(N, c);
  w.m = m;
  // Rows of m elements rounded up to whole alignment units (a unit is align / row_elem_bytes
  // elements); m itself is the protocol's and does not change.
  const std::size_t unit = std::max<std::size_t>(1, align_bytes / row_elem_bytes);
  w.stride = detail::CheckedAdd(m, (unit - m % unit) % unit, "workspace: row stride");
  w.elem_bytes = elem_bytes;
  w.row_elem_bytes = row_elem_bytes;
  w.feedback_rows = feedback ? N : 0;
  std::size_t max_cols = 0;
  for (const Segment& s : segments) {
    if (s.col0 + s.cols > m)
      throw InvalidArgument("workspace: segment [" + std::to_string(s.col0) + ", " +
                            std::to_string(s.col0 + s.cols) + ") outside the " +
                            std::to_string(m) + " columns");
    max_cols = std::max(max_cols, s.cols);
  }
  w.send_slots = static_cast<int>(std::min<std::size_t>(std::size_t(max_slots), segments.size()));
  const std::size_t slot = detail::CheckedMul(max_cols, elem_bytes, "workspace: segment size");
  w.slot_bytes = detail::CheckedAdd(slot, (align_bytes - slot % align_bytes) % align_bytes,
                                    "workspace: segment size");
  // bytes() = (L + 2 + feedback_rows)·stride·row_elem_bytes + send_slots·slot_bytes must fit,
  // or every offset wraps.
  const std::size_t rows = detail::CheckedMul(
      detail::CheckedMul(std::size_t(w.rows() + w.feedback_rows), w.stride, "workspace: rows"),
      row_elem_bytes,
      "workspace: rows");
  detail::CheckedAdd(rows, detail::CheckedMul(std::size_t(w.send_slots), w.slot_bytes,
                                              "workspace: send slots"),
                     "workspace");
  return w;
}

std::size_t SegmentColumns(std::size_t m, std::size_t elem_bytes, std::size_t segment_bytes,
                           int slots, std::size_t align_cols) {
  if (elem_bytes == 0 || segment_bytes < elem_bytes)
    throw InvalidArgument("segments: segment size " + std::to_string(segment_bytes) +
                          " bytes is smaller than one element (" + std::to_string(elem_bytes) +
                          ")");
  if (slots < 1)
    throw InvalidArgument("segments: " + std::to_string(slots) + " send slots, expected >= 1");
  const std::size_t max_cols = segment_bytes / elem_bytes;
  const std::size_t per_slot = (m + std::size_t(slots) - 1) / std::size_t(slots);
  const std::size_t floor_cols = std::max<std::size_t>(1, kMinSegmentBytes / elem_bytes);
  const std::size_t cols =
      std::max<std::size_t>(1, std::min(max_cols, std::max(floor_cols, per_slot)));
  if (align_cols <= 1 || cols % align_cols == 0) return cols;
  const std::size_t up = cols + (align_cols - cols % align_cols);
  if (up <= max_cols) return up;
  const std::size_t down = cols - cols % align_cols;
  return down > 0 ? down : cols;
}

std::vector<Segment> PlanSegments(std::size_t count, int c, std::size_t max_cols,
                                  std::size_t align_cols) {
  if (c < 1) throw InvalidArgument("segments: c = " + std::to_string(c) + ", expected c >= 1");
  if (max_cols == 0) throw InvalidArgument("segments: segment size 0, expected >= 1 column");
  std::vector<Segment> out;
  if (count == 0) return out;
  const std::size_t m = (count + c - 1) / c;
  // Component k has data at column col iff k m + col < count: q full components, and one more
  // (component q) for the first r columns.
  const std::size_t q = count / m, r = count % m;
  // Sized first: a count too large for memory fails here at once with bad_alloc, where growing
  // the vector took a minute and gigabytes before failing (the workspace is allocated after).
  const auto pieces = [&](std::size_t cols) { return cols / max_cols + (cols % max_cols != 0); };
  out.reserve(pieces(r) + pieces(m - r) + 1);  // + 1: the aligning cut after column r
  auto cut = [&](std::size_t from, std::size_t to, int kc) {
    for (std::size_t col = from; col < to;) {
      std::size_t end = std::min(to, col + max_cols);
      // A segment starting off the grid ends on it, if that leaves it any columns.
      if (align_cols > 1 && end < to && end % align_cols != 0 && end - end % align_cols > col)
        end -= end % align_cols;
      out.push_back({col, end - col, kc});
      col = end;
    }
  };
  cut(0, r, static_cast<int>(q + 1));
  cut(r, m, static_cast<int>(q));
  return out;
}

}  // namespace cerar
