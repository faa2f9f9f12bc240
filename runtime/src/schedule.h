#pragma once
// The per-round schedule of the protocol engine (PROTOCOL.md §2-§3) as pure functions of N, c and
// the round, plus where each vector lives in a rank's workspace and how the columns are cut into
// pipelined segments. Nothing here touches memory or a transport, so it is tested on its own.
// Internal to the runtime (not installed): the engines' plan, not an API. Tests and the compute
// benchmark include it through runtime/src.
#include <cstddef>
#include <vector>

#include "cerar/runtime/backend.h"  // RowRange

namespace cerar {

// What rank j does in step t, for t = 0 … L (L + 1 steps: step L only finishes the last
// observation). Indices of encoded vectors e(t) and observations o(N-2+r) are 0-based; -1 = none.
//
//   x(t) = e(t) + y(t-1) - e(t-N)    and    o(t-1) = y(t-1) - e(t-N)
//
// share the term y(t-1) - e(t-N), so one fused back-end Step per segment computes both.
struct RoundActions {
  int t = 0;
  int recv_read = -1;  // round whose received vector y(recv_read) = y(t-1) is read (wait first)
  int e_now = -1;      // encoded vector added and sent this round: t, or -1 when t = L
  int e_back = -1;     // encoded vector subtracted: t-N, or -1 when t < N (lap-limiting term)
  int obs = -1;        // observation index r written: o(N-2+r) = o(t-1); -1 when t-1 < N-2
  bool send = false;   // sends x(t) to rank+1 and receives y(t) from rank-1 (t < L)
};

int NumRounds(int N, int c);                   // L = c + N - 2 (rounds with a send)
RoundActions RoundSchedule(int N, int c, int t);  // t in [0, L]; InvalidArgument otherwise

// When the encoder rows are computed, so that the encode overlaps the link instead of delaying
// the first send: e(0) in step 0 before its send, and the rest in blocks of `block_rows` after
// the sends of steps 0, B, 2B, …: step t = kB encodes e(t+1) … e(min(t+B, L-1)). Each row is
// then ready before the step that reads it (e(t) at step t), its workspace row is free (a row is
// reused for y and o only after its step has read it), and the caller's buffer, which the encoder
// reads, is written only by the decoder in step L.
//
// Why blocks: each Encode call reads the segment's kc components once, whatever the number of
// rows. One row per call (B = 1, as the engine first did) is bound by that read, several times
// slower than blocks of 16 rows (docs/runtime.md, "cerar-bench-compute"). A larger block burdens
// one step more; with send_slots exchanges in flight the link does not wait for it.
inline constexpr int kEncodeBlockRows = 16;
RowRange EncodeRowsAfterSend(int N, int c, int t, int block_rows = kEncodeBlockRows);

// A column range [col0, col0 + cols) of the m-element rows in which exactly kc components hold
// data (the rest is implicit zero padding, PROTOCOL.md §1).
struct Segment {
  std::size_t col0 = 0, cols = 0;
  int kc = 0;
};
// Cuts [0, m) with m = ceil(count / c) into segments of at most max_cols columns, never
// straddling the column where the number of data components drops. Empty for count = 0.
// align_cols > 1 (a device back end's vector width in columns; max_cols a multiple of it): after
// that column, which the protocol fixes, the first segment ends on a multiple of align_cols, so
// every later one starts on one too (segments before it start on multiples of max_cols).
std::vector<Segment> PlanSegments(std::size_t count, int c, std::size_t max_cols,
                                  std::size_t align_cols = 1);

// The segment width (columns) of the engine for rows of m elements of elem_bytes:
//   min(segment_bytes, max(kMinSegmentBytes, ceil(m / slots) elements)) / elem_bytes, >= 1.
// A round's exchange of segment s waits for the previous round's segment s, so at most one round
// (S segments) can be in flight whatever the slot count: a round smaller than `slots` segments
// is therefore cut into `slots` segments, so the whole window is usable, but not below
// kMinSegmentBytes (unless segment_bytes is smaller), where per-message costs (Open MPI's
// rendezvous handshake above its 64 KiB eager limit, one more Wait) outweigh a deeper pipeline.
inline constexpr std::size_t kMinSegmentBytes = std::size_t{64} << 10;
// The alignment of a device back end's workspace rows, send slots and segment starts: the CUDA
// step kernel's vector width (kernels.cu).
inline constexpr std::size_t kDeviceAlignBytes = 16;
// With align_cols > 1 the width is rounded up to a multiple of it where segment_bytes allows,
// else down where that leaves at least one multiple.
std::size_t SegmentColumns(std::size_t m, std::size_t elem_bytes, std::size_t segment_bytes,
                           int slots, std::size_t align_cols = 1);

// Workspace of one rank (derivation in coded_allreduce.cc): L + 2 rows of m elements, then the
// send slots.
//   rows 0, 1          : y(t) for t <= N-1; they become observations o(N-2), o(N-1)
//   rows 2 … L+1       : e(0) … e(L-1); once e(t-N) has been read at round t its row receives y(t)
//                        and becomes observation o(t) (row t-N+2)
//   send slots         : x(t)[s] is written into slot (exchange index) mod send_slots, where
//                        exchange i = t·S + s (round t, segment s of S); a slot is reused only
//                        after exchange i - send_slots, its previous user, has been waited for
// so observation r always sits in row r (the decoder reads c rows with the row stride), and the
// whole workspace is (L + 2)·m + send_slots·max_cols elements: (1 + N/c)·d elements plus at most
// send_slots·segment_bytes bytes (with a device back end's padding, up to 15 bytes more per row
// and per slot: MakeWorkspaceLayout's align_bytes).
//   feedback rows      : only when the back end feeds the packets' rounding back
//                        (ComputeBackend::FeedsBackRounding): the feedback of the diagonal that
//                        x(t) starts, written at round t and read at round t+N, in row
//                        L+2 + (t mod N); N rows more, (1 + 2N/c)·d elements in all.
// Rows hold row_elem_bytes per element (ComputeBackend::StateElementBytes: 8 where a float32
// run keeps them in float64), the send slots elem_bytes (the packets' dtype). With wider rows,
// y(t) of segment s is received into the upper half of the segment's span of its row
// (recv_offset), so that the observation, written in place, never overwrites an unread y.

struct WorkspaceLayout {
  int N = 0, c = 0, L = 0;
  std::size_t m = 0;           // elements per row
  std::size_t elem_bytes = 0;  // bytes per element of a packet (x, y)
  std::size_t row_elem_bytes = 0;  // bytes per element of a row: elem_bytes, or 8 (float64 state)
  int send_slots = 0;          // min(max_slots, S); 0 when there are no segments
  std::size_t slot_bytes = 0;  // bytes of the largest segment (max_cols · elem_bytes)
  int feedback_rows = 0;       // N when the packets' rounding is fed back, else 0
  // Elements from one row to the next: m, or m rounded up so that rows start on align_bytes
  // (MakeWorkspaceLayout); the columns in [m, stride) are never read or written.
  std::size_t stride = 0;

  int rows() const { return L + 2; }
  int enc_row(int t) const { return 2 + t; }    // e(t)
  int obs_row(int r) const { return r; }        // o(N-2+r)
  int recv_row(int t) const;                    // y(t), t in [0, L)
  int send_slot(std::size_t exchange) const;    // exchange mod send_slots
  int feedback_row(int t) const;                // rounds t in [0, L]: L + 2 + t mod N
  std::size_t row_offset(int r) const { return std::size_t(r) * stride * row_elem_bytes; }
  // Where y(t)[s] is received in row r: the segment's span starts at col0·row_elem_bytes; y
  // takes its last cols·elem_bytes bytes (the whole span when rows hold packets' elements).
  std::size_t recv_offset(int r, const Segment& s) const {
    return row_offset(r) + s.col0 * row_elem_bytes + s.cols * (row_elem_bytes - elem_bytes);
  }
  std::size_t slot_offset(int k) const {
    return row_offset(rows() + feedback_rows) + std::size_t(k) * slot_bytes;
  }
  // (L + 2 + feedback_rows)·stride·row_elem_bytes + send_slots·slot_bytes.
  std::size_t bytes() const { return slot_offset(send_slots); }
};
// Rows only (m = 0, no send slots): the row schedule, independent of the vector length.
WorkspaceLayout MakeWorkspaceLayout(int N, int c);
// The full layout for vectors of m elements of elem_bytes cut into `segments` (PlanSegments),
// with min(max_slots, segments) send slots; max_slots >= 1 (InvalidArgument otherwise); with
// `feedback`, N feedback rows; rows of row_elem_bytes per element (0: elem_bytes; otherwise
// >= elem_bytes, InvalidArgument otherwise). align_bytes (1, or a power of two that
// row_elem_bytes and elem_bytes divide) pads each row and each send slot to a multiple of it, so
// that with segments starting on multiples of align_bytes / elem_bytes columns (PlanSegments'
// align_cols) every pointer of a step is aligned to it: the CUDA step kernel moves 16-byte
// vectors only when all of them are. (Not a float64-state row's y, which ends its span: where a
// segment's width is not a multiple of the vector, as often the last of a region, it is not.)
WorkspaceLayout MakeWorkspaceLayout(int N, int c, std::size_t m, std::size_t elem_bytes,
                                    const std::vector<Segment>& segments, int max_slots,
                                    bool feedback = false, std::size_t row_elem_bytes = 0,
                                    std::size_t align_bytes = 1);

}  // namespace cerar
