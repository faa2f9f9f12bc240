// The protocol engine: the round loop of PROTOCOL.md §2-§3, written once for every transport and
// back end.
//
// Derivation of the schedule. Rank j sends x(t) = e(t) + y(t-1) - e(t-N) in rounds t = 0 … L-1
// and receives y(t) = x_{j-1}(t). Its observations o(t) = y(t) - e(t-N+1), t = N-2 … L-1, satisfy
//     o(t-1) = y(t-1) - e(t-N)   and   x(t) = e(t) + o(t-1),
// so step t (t = 0 … L) computes tmp = y(t-1) - e(t-N) once, keeps it as an observation when
// t-1 >= N-2, and adds e(t) to it to send when t < L; step L only finishes o(L-1). The pure
// function RoundSchedule (schedule.h) gives each step's indices.
//
// Workspace. e(t) is read at step t (added) and at step t+N (subtracted), and at no other time;
// so once step t has read e(t-N), its row is free, and y(t), received during round t, goes there
// and later becomes o(t) in place (the step writes the observation over the vector it reads).
// y(0) … y(N-2) arrive before any row is free: y(0) … y(N-3) are consumed by the next step, so
// they share row 0, where y(N-2) = o(N-2) then stays; y(N-1) = o(N-1) needs row 1. That is
// L + 2 = c + N rows of m: (1 + N/c) d elements. Observation r sits in row r, so the decoder
// reads them as one strided c x m block.
//
// Float64 state. Where the back end keeps its rows in float64 (StateElementBytes = 8 for a
// float32 run with Accumulation::kFloat64State) the layout is the same with rows twice as wide,
// and packets stay float32. y(t)[s] then arrives in the upper half of segment s's span of its row
// and the step widens it into o(t) over the whole span, in place: a segment's bytes are only
// ever touched by that segment's own steps, encodes and receives, as before.
//
// Pipelining. The m columns are cut into segments (PlanSegments). In step t each segment waits
// only for its own y(t-1), steps, and starts its own send, so the link carries segment s while
// segment s+1 is computed; in step 0 each segment is encoded just before its first send, so the
// first message does not wait for a whole-vector encode. Decoding happens per segment in step L.
//
// Send slots. x(t) is not kept as a row: it exists one segment at a time, from its Step until
// its exchange completes. Exchange i = t·S + s (round t, segment s of S) sends from slot
// i mod K, K = min(send_slots, S) slots of the largest segment's size, and before slot i mod K
// is rewritten the engine waits for exchange i - K, its previous user. So the workspace is
// (1 + N/c) d elements plus at most send_slots·segment_bytes, a constant independent of d.
// With all L encoded vectors materialised, L + 2 rows plus one segment is the minimum: in round
// N-1 all L e-rows, o(N-2), y(N-1) and the segment of x(N-1) being sent are live at once. The
// other K - 1 slots buy pipelining (AllReduceOptions::send_slots, default kDefaultSendSlots = 8;
// docs/runtime.md says why 8).
//
// No deadlock. Every rank starts its exchanges in the same order i = 0, 1, 2, …, and before
// starting exchange i it waits only for exchanges before i: i - S (its y(t-1)[s]; round t
// depends only on round t-1, across ranks) and i - K (slot reuse). Suppose every rank has started
// all exchanges before i. Then each of those has both its sender and its receiver posted, so it
// completes (handles complete in order), every rank's waits return and every rank starts
// exchange i. By induction all L·S exchanges start and complete; the bounded pipeline only
// limits how far a rank runs ahead of its neighbours (K exchanges).
//
// Waits. Handles complete in order, so waiting for exchange i completes every exchange before
// it. The engine records how many exchanges it has waited for and waits for exchange i only if
// i is not yet among them: the slot-reuse wait and the y(t-1)[s] wait never wait twice. With
// S <= send_slots segments, K = S and the slot-reuse wait is the y(t-1)[s] wait itself.
#include <algorithm>
#include <atomic>
#include <iomanip>
#include <limits>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "agreement.h"
#include "run_timer.h"
#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "schedule.h"
#include "checked_size.h"

namespace cerar {

struct CodedAllReduce::Plan {
  std::vector<Segment> segments;
  WorkspaceLayout layout;
  std::vector<Transport::Handle> handles;  // ring of max(S, K) exchange handles
  bool split_arithmetic = true;  // host back end: Transport::Progress between blocks
  bool feedback = false;         // the back end feeds the packets' rounding back
};

namespace {
// About 2^20 flops of arithmetic between two Progress calls: ~0.1-0.3 ms on one core, far less
// than a socket buffer's worth of link time, so the link never drains while the engine computes,
// and few enough calls that progress itself stays cheap. The block is sized per kind of work,
// from its flops per column: encoding k rows 2ck, decoding 2c^2, a step (memory-bound: five
// streams of one element) counted as 8. Device back ends work asynchronously: no split there.
constexpr std::size_t kProgressFlops = std::size_t{1} << 20;
constexpr std::size_t kStepFlopsPerColumn = 8;

// With the buffer's accumulation the back end stores E and D in the buffer's type; an entry
// beyond its largest finite value (f16: 65504, reached by the decoders of ill-conditioned
// designs) would be inf there, and every result inf or NaN. The whole design is checked, so that
// every rank reaches the same verdict.
void CheckMatricesFitBufferType(const Design& design, DType dtype, Accumulation accumulation) {
  if (accumulation != Accumulation::kBuffer || dtype == DType::kFloat64) return;
  const double largest = dtype == DType::kFloat16    ? 65504.0
                         : dtype == DType::kBFloat16 ? 0x1.fep127
                                                     : double(std::numeric_limits<float>::max());
  auto check = [&](const MatrixXd& a, const char* what, int rank) {
    if (a.size() == 0) return;
    const double max_abs = a.cwiseAbs().maxCoeff();
    if (max_abs > largest) {
      std::ostringstream m;
      m << "coded all-reduce: " << what << "[" << rank << "] has an entry of magnitude "
        << std::setprecision(4) << max_abs << ", beyond " << ToString(dtype)
        << "'s largest finite value " << largest << ", the type the back end stores the "
        << "matrices in (accumulation 'buffer'); use a wider buffer type, or rescale the design "
        << "(E -> s E, D -> D / s leaves it unchanged)";
      throw InvalidArgument(m.str());
    }
  };
  for (int i = 0; i < design.N(); ++i) {
    check(design.encoder(i), "E", i);
    check(design.decoder(i), "D", i);
  }
}
std::size_t ProgressBlockColumns(std::size_t flops_per_col, std::size_t seg_cols) {
  const std::size_t cols = kProgressFlops / std::max<std::size_t>(flops_per_col, 1);
  return std::min(seg_cols, std::max<std::size_t>(512, cols));
}
}  // namespace

CodedAllReduce::CodedAllReduce(const Design& design, Transport& transport, ComputeBackend& backend,
                               std::size_t count, AllReduceOptions options)
    : design_(design), transport_(transport), backend_(backend), count_(count), m_(0),
      options_(options) {
  detail::CheckEnumValues(options, "coded all-reduce");
  detail::CheckBackend(backend, transport, options.dtype, "coded all-reduce",
                       options.accumulation);
  const std::size_t es = SizeOf(options.dtype);
  detail::CheckedMul(count, es, "coded all-reduce: count " + std::to_string(count));
  detail::MaxSegmentColumns(options, es);
  if (options.send_slots < 1)
    throw InvalidArgument("coded all-reduce: send_slots = " + std::to_string(options.send_slots) +
                          ", expected >= 1");
  // Collective checks first, so that every rank reaches them and every rank gets the error.
  detail::CheckRunAgreement(transport, detail::Algorithm::kCoded, count, options);
  transport.CheckAgreement("design fingerprint", design.fingerprint());
  if (design.N() != transport.size())
    throw InvalidArgument("coded all-reduce: the design is for N = " + std::to_string(design.N()) +
                          " ranks but the transport has " + std::to_string(transport.size()) +
                          " ranks (rank " + std::to_string(transport.rank()) + ")");
  CheckMatricesFitBufferType(design, options.dtype, options.accumulation);
  const int c = design.c();
  m_ = (count + c - 1) / c;
  // A device back end's step kernel moves 16-byte vectors only where every pointer it is given
  // is 16-byte aligned: device rows and send slots are padded to 16 bytes and segments start on
  // 16-byte columns (but the one at the column where kc drops, which the protocol fixes), so that
  // they are (docs/cuda.md, "Alignment"). Host back ends keep the unpadded layout.
  const std::size_t align_bytes =
      backend.memory_space() == MemorySpace::kDevice ? kDeviceAlignBytes : 1;
  const std::size_t align_cols = std::max<std::size_t>(1, align_bytes / es);
  // Segments are cut by it, and every rank must cut the same ones (a host and a device rank on
  // one transport would send messages of different sizes).
  transport.CheckAgreement("segment alignment in columns (device back ends 16 bytes, host 1 "
                           "element)",
                           align_cols);
  const std::size_t cols =
      SegmentColumns(m_, es, options.segment_bytes, options.send_slots, align_cols);
  backend.SetMatrices(design.encoder(transport.rank()), design.decoder(transport.rank()));
  backend.SetAccumulation(options.accumulation);
  static std::atomic<std::uint64_t> engines{0};
  id_ = ++engines;
  backend.set_holder(id_);
  // A count whose bytes fit in 64 bits may still not fit in memory: say which, by name.
  const auto too_large = [&](const std::string& what) {
    return InvalidArgument("coded all-reduce: count " + std::to_string(count) + " needs " + what +
                           ", more than this process can allocate");
  };
  const std::string segments =
      std::to_string(m_ / cols + 1) + " segments of " + std::to_string(cols) + " columns";
  plan_ = std::make_unique<Plan>();
  try {
    plan_->segments = PlanSegments(count, c, cols, align_cols);
  } catch (const std::bad_alloc&) {
    throw too_large(segments);
  } catch (const std::length_error&) {  // beyond a vector's max_size
    throw too_large(segments);
  }
  plan_->feedback = backend.FeedsBackRounding(options.dtype) && FeedsBackRounding(design.N(), c);
  plan_->layout = MakeWorkspaceLayout(design.N(), c, m_, es, plan_->segments, options.send_slots,
                                      plan_->feedback, backend.StateElementBytes(options.dtype),
                                      align_bytes);
  plan_->handles.resize(std::max<std::size_t>(plan_->segments.size(),
                                              std::size_t(plan_->layout.send_slots)));
  plan_->split_arithmetic = backend.memory_space() != MemorySpace::kDevice;
  // A step is at most one segment long (blocks never exceed their segment).
  std::size_t max_step = 0;
  for (const Segment& sg : plan_->segments) max_step = std::max(max_step, sg.cols);
  backend.Prepare(options.dtype, max_step);  // its working memory now, not inside a run
  workspace_bytes_ = plan_->layout.bytes();
  try {
    if (workspace_bytes_) workspace_ = backend.Allocate(workspace_bytes_);
  } catch (const std::bad_alloc&) {
    throw too_large(std::to_string(workspace_bytes_) + " bytes of workspace");
  }
}

CodedAllReduce::~CodedAllReduce() {
  // After a failed run the transport may still write into the workspace (a receive posted before
  // the failure, a peer's late message): leak it rather than let that land in freed memory,
  // unless the transport has stopped every exchange (an aborted NCCL communicator).
  detail::Release(backend_, transport_, workspace_, failed_, "coded all-reduce");
}

std::uint64_t CodedAllReduce::expected_bytes_per_run() const {
  return std::uint64_t(design_.L()) * m_ * SizeOf(options_.dtype);
}

void CodedAllReduce::Run(void* buffer) {
  times_ = {};
  if (m_ == 0) return;  // count = 0 on every rank (checked at construction): nothing to send
  const detail::Stopwatch whole_run(times_.wall_s);
  if (!buffer) throw InvalidArgument("coded all-reduce: null buffer for count " +
                                     std::to_string(count_));
  if (backend_.holder() != id_)
    throw InvalidArgument("coded all-reduce: the back end holds another coded all-reduce's design "
                          "(constructed later on the same back end); give each its own back end");
  backend_.SetAccumulation(options_.accumulation);  // a ring on the same back end resets it
  const detail::FailureFlag failure(failed_);
  const int N = design_.N(), c = design_.c(), L = design_.L();
  const DType dt = options_.dtype;
  const std::size_t es = SizeOf(dt);
  const std::vector<Segment>& segs = plan_->segments;
  const WorkspaceLayout& ws = plan_->layout;
  const std::size_t row_es = ws.row_elem_bytes;  // es, or 8 where the back end keeps float64 rows
  const std::size_t S = segs.size();
  char* base = static_cast<char*>(workspace_);
  auto row = [&](int r) { return base + ws.row_offset(r); };
  auto at = [&](int r, std::size_t col) { return row(r) + col * row_es; };
  auto recv_at = [&](int r, const Segment& sg) { return base + ws.recv_offset(r, sg); };
  const double scale = options_.op == ReduceOp::kAverage ? 1.0 / N : 1.0;
  // handles[i mod H] is exchange i's handle; H >= S and >= K, so exchanges i - S and i - K are
  // still there at exchange i.
  const std::size_t K = static_cast<std::size_t>(ws.send_slots);
  std::vector<Transport::Handle>& handles = plan_->handles;
  const std::size_t H = handles.size();
  std::size_t waited = 0;  // exchanges 0 … waited-1 are complete
  auto wait_for = [&](std::size_t exchange) {
    if (exchange < waited) return;  // completed by an earlier wait (in order)
    const detail::Stopwatch w(times_.wait_s);
    transport_.Wait(handles[exchange % H]);
    waited = exchange + 1;
  };

  // The arithmetic of a segment runs in blocks (ProgressBlockColumns) with a Progress call after
  // each, so that bytes of earlier exchanges keep moving while this one is computed.
  auto blocks = [&](const Segment& sg, std::size_t flops_per_col, auto&& f) {
    const std::size_t B = plan_->split_arithmetic ? ProgressBlockColumns(flops_per_col, sg.cols)
                                                  : sg.cols;
    for (std::size_t b = 0; b < sg.cols; b += B) {
      {
        const detail::Stopwatch w(times_.compute_s);
        f(sg.col0 + b, std::min(B, sg.cols - b));
      }
      const detail::Stopwatch w(times_.progress_s);
      transport_.Progress();
    }
  };
  const std::size_t c_cols = std::size_t(c);
  // Block b of a segment: packets (x, y) advance by es per column, rows by row_es.
  auto off = [&](auto* p, std::size_t b) { return p ? p + b * es : nullptr; };
  auto off_row = [&](auto* p, std::size_t b) { return p ? p + b * row_es : nullptr; };

  for (int t = 0; t <= L; ++t) {
    const RoundActions a = RoundSchedule(N, c, t);
    const RowRange later_rows = EncodeRowsAfterSend(N, c, t);
    for (std::size_t s = 0; s < S; ++s) {
      const Segment& sg = segs[s];
      const std::size_t i = std::size_t(t) * S + s;  // exchange index of this step
      if (t == 0)  // e(0) only: the first send waits for one row of the encoder, not L
        blocks(sg, 2 * c_cols, [&](std::size_t col0, std::size_t cols) {
          backend_.Encode(dt, buffer, m_, col0, cols, sg.kc, {0, 1}, row(ws.enc_row(0)),
                          ws.stride);
        });
      char* y = nullptr;
      if (a.recv_read >= 0) {
        wait_for(i - S);  // y(t-1)[s]
        y = recv_at(ws.recv_row(a.recv_read), sg);
      }
      char* x = nullptr;
      if (a.send) {
        if (i >= K) wait_for(i - K);  // the slot's previous exchange
        x = base + ws.slot_offset(ws.send_slot(i));
      }
      const char* e_now = a.e_now >= 0 ? at(ws.enc_row(a.e_now), sg.col0) : nullptr;
      const char* e_back = a.e_back >= 0 ? at(ws.enc_row(a.e_back), sg.col0) : nullptr;
      // y's row (layout): the same pointer as y unless the rows are wider than the packets.
      char* obs = a.obs >= 0 ? at(ws.obs_row(a.obs), sg.col0) : nullptr;
      // Feedback of the diagonal x(t) starts: written at round t - N (none before round N),
      // rewritten now for round t + N (none when no later round reads it).
      char* feedback = plan_->feedback ? at(ws.feedback_row(t), sg.col0) : nullptr;
      const char* feedback_in = t >= N ? feedback : nullptr;
      char* feedback_out = a.send && t + N <= L ? feedback : nullptr;
      blocks(sg, kStepFlopsPerColumn, [&](std::size_t col0, std::size_t cols) {
        const std::size_t b = col0 - sg.col0;
        if (plan_->feedback)
          backend_.StepWithFeedback(dt, off_row(e_now, b), off(y, b), off_row(e_back, b),
                                    off_row(feedback_in, b), off(x, b), off_row(obs, b),
                                    off_row(feedback_out, b), cols);
        else
          backend_.Step(dt, off_row(e_now, b), off(y, b), off_row(e_back, b), off(x, b),
                        off_row(obs, b), cols);
      });
      if (a.send)
        handles[i % H] = transport_.StartExchange(x, recv_at(ws.recv_row(t), sg), sg.cols * es);
      // With the message on its way: this step's share of the encoder rows.
      if (later_rows.count > 0)
        blocks(sg, 2 * c_cols * std::size_t(later_rows.count),
               [&](std::size_t col0, std::size_t cols) {
          backend_.Encode(dt, buffer, m_, col0, cols, sg.kc, later_rows, row(ws.enc_row(0)),
                          ws.stride);
        });
      if (t == L)  // all c observations of this segment are in rows 0 … c-1
        blocks(sg, 2 * c_cols * c_cols, [&](std::size_t col0, std::size_t cols) {
          backend_.Decode(dt, row(ws.obs_row(0)), ws.stride, buffer, m_, col0, cols, sg.kc,
                          scale);
        });
    }
  }
  const detail::Stopwatch w(times_.wait_s);  // the device's queued arithmetic, if any
  transport_.Finish();  // with the transport's deadline: a device sync has none
  backend_.Synchronize();
}

}  // namespace cerar
