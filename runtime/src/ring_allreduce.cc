// Exact ring all-reduce (reduce-scatter then all-gather) on a Transport: the baseline CERAR is
// compared with. Segmented and pipelined like the coded engine; its arithmetic runs on a
// ComputeBackend (in-place adds are Step(x, y, -) with x = e_now; copies and zeroing are Step
// calls too), so it works on host and device memory alike.
//
// The buffer is cut into N equal chunks of q = floor(n/N) elements, reduced in place; the
// remaining n - N q < N elements go through a second pass on a zero-padded N-element scratch
// (chunks of 1), because every exchange moves equal byte counts in both directions.
// Reduce-scatter step s (0 … N-2): send chunk r-s, receive chunk r-s-1 into scratch and add it.
// All-gather step s (0 … N-2): send chunk r+1-s (rank r owns chunk r+1 after reduce-scatter),
// receive chunk r-s in place. Every segment of a step is in flight at once: the window is a
// whole chunk.
#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "agreement.h"
#include "run_timer.h"
#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "schedule.h"
#include "checked_size.h"

namespace cerar {

RingAllReduce::RingAllReduce(Transport& transport, ComputeBackend& backend, std::size_t count,
                             AllReduceOptions options)
    : transport_(transport), backend_(backend), count_(count), options_(options) {
  Init();
}

RingAllReduce::RingAllReduce(Transport& transport, std::size_t count, AllReduceOptions options)
    : RingAllReduce(transport, CreateCpuBackend(), count, options) {}

RingAllReduce::RingAllReduce(Transport& transport, std::unique_ptr<ComputeBackend> own,
                             std::size_t count, AllReduceOptions options)
    : own_backend_(std::move(own)), transport_(transport), backend_(*own_backend_),
      count_(count), options_(options) {
  Init();
}

void RingAllReduce::Init() {
  detail::CheckEnumValues(options_, "ring all-reduce");
  detail::CheckBackend(backend_, transport_, options_.dtype, "ring all-reduce");
  detail::MaxSegmentColumns(options_, SizeOf(options_.dtype));
  if (options_.send_slots < 1)
    throw InvalidArgument("ring all-reduce: send_slots = " + std::to_string(options_.send_slots) +
                          ", expected >= 1");
  detail::CheckRunAgreement(transport_, detail::Algorithm::kExactRing, count_, options_);
  const std::size_t N = transport_.size();
  // The buffer (count elements) and the bytes sent (about 2·count elements) must be sizes.
  detail::CheckedMul(count_, 2 * SizeOf(options_.dtype),
                     "ring all-reduce: count " + std::to_string(count_));
  // [one chunk of scratch for reduce-scatter][N elements for the remainder pass]
  scratch_bytes_ = (std::max<std::size_t>(count_ / N, 1) + N) * SizeOf(options_.dtype);
  try {
    scratch_ = backend_.Allocate(scratch_bytes_);
  } catch (const std::bad_alloc&) {
    throw InvalidArgument("ring all-reduce: count " + std::to_string(count_) + " needs " +
                          std::to_string(scratch_bytes_) +
                          " bytes of scratch, more than this process can allocate");
  }
}

RingAllReduce::~RingAllReduce() {
  // After a failed run the transport may still write into the scratch: leak it (as the coded
  // engine does its workspace).
  detail::Release(backend_, transport_, scratch_, failed_, "ring all-reduce");
}

std::uint64_t RingAllReduce::expected_bytes_per_run() const {
  const std::uint64_t N = transport_.size();
  const std::uint64_t chunks = count_ / N + (count_ % N ? 1 : 0);
  return 2 * (N - 1) * chunks * SizeOf(options_.dtype);
}

// One ring pass over N chunks of `chunk` elements at `data`, with `tmp` holding one chunk.
void RingAllReduce::Pass(char* data, std::size_t chunk, char* tmp) {
  Transport& tr = transport_;
  const DType dt = options_.dtype;
  const int N = tr.size(), r = tr.rank();
  // Segments as the coded engine cuts a round (SegmentColumns): a small chunk is cut into up to
  // send_slots segments, so the baseline pipelines as deeply as CERAR.
  const std::size_t es = SizeOf(dt);
  const std::size_t seg_cols = SegmentColumns(chunk, es, options_.segment_bytes, options_.send_slots);
  auto mod = [N](int v) { return ((v % N) + N) % N; };
  auto chunk_ptr = [&](int k) { return data + std::size_t(mod(k)) * chunk * es; };
  const int steps = 2 * (N - 1);
  auto send_chunk = [&](int s) { return s < N - 1 ? r - s : r + 1 - (s - (N - 1)); };
  auto recv_chunk = [&](int s) { return s < N - 1 ? r - s - 1 : r - (s - (N - 1)); };
  std::vector<std::pair<std::size_t, std::size_t>> segs;
  for (std::size_t col = 0; col < chunk; col += seg_cols)
    segs.emplace_back(col, std::min(seg_cols, chunk - col));
  std::vector<Transport::Handle> pending(segs.size());
  for (int s = 0; s <= steps; ++s) {
    for (std::size_t k = 0; k < segs.size(); ++k) {
      const auto [col, len] = segs[k];
      if (s > 0) {
        {
          const detail::Stopwatch w(times_.wait_s);
          tr.Wait(pending[k]);
        }
        if (s - 1 < N - 1) {  // finish reduce-scatter step s-1 for this segment: own += tmp
          const detail::Stopwatch w(times_.compute_s);
          char* own = chunk_ptr(recv_chunk(s - 1)) + col * es;
          backend_.Step(dt, own, tmp + col * es, nullptr, own, nullptr, len);
        }
      }
      if (s == steps) continue;
      char* recv = s < N - 1 ? tmp + col * es : chunk_ptr(recv_chunk(s)) + col * es;
      pending[k] = tr.StartExchange(chunk_ptr(send_chunk(s)) + col * es, recv, len * es);
    }
  }
}

void RingAllReduce::Run(void* buffer) {
  times_ = {};
  if (count_ == 0) return;
  const detail::Stopwatch whole_run(times_.wall_s);
  if (!buffer) throw InvalidArgument("ring all-reduce: null buffer for count " +
                                     std::to_string(count_));
  // The ring adds in the buffer's type whatever a coded engine on the same back end left set
  // (a float64-state accumulation would read the float32 buffer as doubles).
  backend_.SetAccumulation(Accumulation::kBuffer);
  const detail::FailureFlag failure(failed_);
  const DType dt = options_.dtype;
  const std::size_t N = transport_.size(), es = SizeOf(dt);
  char* data = static_cast<char*>(buffer);
  char* scratch = static_cast<char*>(scratch_);
  const std::size_t q = count_ / N, rest = count_ - q * N;
  if (N > 1 && q > 0) Pass(data, q, scratch);
  if (N > 1 && rest > 0) {
    char* pad = scratch + std::max<std::size_t>(q, 1) * es;  // the rest, zero-padded
    char* tail = data + q * N * es;
    backend_.Step(dt, nullptr, nullptr, nullptr, pad, nullptr, N);   // pad = 0
    backend_.Step(dt, nullptr, tail, nullptr, pad, nullptr, rest);   // pad[:rest] = tail
    Pass(pad, 1, scratch);
    backend_.Step(dt, nullptr, pad, nullptr, tail, nullptr, rest);   // tail = pad[:rest]
  }
  if (options_.op == ReduceOp::kAverage) {
    const detail::Stopwatch w(times_.compute_s);
    backend_.Scale(dt, buffer, count_, 1.0 / double(N));
  }
  const detail::Stopwatch w(times_.wait_s);  // the device's queued arithmetic, if any
  transport_.Finish();  // with the transport's deadline: a device sync has none
  backend_.Synchronize();
}

}  // namespace cerar
