// Exact ring all-reduce (reduce-scatter then all-gather) on a Transport: the baseline CERAR is
// compared with. Host memory. Segmented and pipelined like the coded engine.
//
// The buffer is cut into N equal chunks of q = floor(n/N) elements, reduced in place; the
// remaining n - N q < N elements go through a second pass on a zero-padded N-element scratch
// (chunks of 1), because every exchange moves equal byte counts in both directions.
// Reduce-scatter step s (0 … N-2): send chunk r-s, receive chunk r-s-1 into scratch and add it.
// All-gather step s (0 … N-2): send chunk r+1-s (rank r owns chunk r+1 after reduce-scatter),
// receive chunk r-s in place.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <string>

#include "agreement.h"
#include "cerar/format/errors.h"
#include "cerar/runtime/allreduce.h"
#include "checked_size.h"

namespace cerar {
namespace {

template <typename T>
void Add(T* dst, const T* src, std::size_t n) {
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dst, n) +=
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(src, n);
}

void AddBytes(DType dt, char* dst, const char* src, std::size_t n) {
  if (dt == DType::kFloat32)
    Add(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), n);
  else
    Add(reinterpret_cast<double*>(dst), reinterpret_cast<const double*>(src), n);
}

// One ring pass over `N` chunks of `chunk` elements at `data`, with `tmp` holding one chunk.
void RingPass(Transport& tr, DType dt, char* data, std::size_t chunk, char* tmp,
              std::size_t seg_cols) {
  const int N = tr.size(), r = tr.rank();
  const std::size_t es = SizeOf(dt);
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
        tr.Wait(pending[k]);
        if (s - 1 < N - 1)  // finish reduce-scatter step s-1 for this segment
          AddBytes(dt, chunk_ptr(recv_chunk(s - 1)) + col * es, tmp + col * es, len);
      }
      if (s == steps) continue;
      char* recv = s < N - 1 ? tmp + col * es : chunk_ptr(recv_chunk(s)) + col * es;
      pending[k] = tr.StartExchange(chunk_ptr(send_chunk(s)) + col * es, recv, len * es);
    }
  }
}

}  // namespace

RingAllReduce::RingAllReduce(Transport& transport, std::size_t count, AllReduceOptions options)
    : transport_(transport), count_(count), options_(options) {
  detail::CheckDType(options.dtype, "ring all-reduce");
  detail::SegmentColumns(options, SizeOf(options.dtype));
  if (transport.memory_space() != MemorySpace::kHost)
    throw InvalidArgument("ring all-reduce: host memory only (transport works on device memory)");
  detail::CheckRunAgreement(transport, count, options);
  const std::size_t N = transport.size();
  // The buffer (count elements) and the bytes sent (about 2·count elements) must be sizes.
  detail::CheckedMul(count, 2 * SizeOf(options.dtype),
                     "ring all-reduce: count " + std::to_string(count));
  // [one chunk of scratch for reduce-scatter][N elements for the remainder pass]
  scratch_.resize((std::max<std::size_t>(count / N, 1) + N) * SizeOf(options.dtype));
}

RingAllReduce::~RingAllReduce() = default;

std::uint64_t RingAllReduce::expected_bytes_per_run() const {
  const std::uint64_t N = transport_.size();
  const std::uint64_t chunks = count_ / N + (count_ % N ? 1 : 0);
  return 2 * (N - 1) * chunks * SizeOf(options_.dtype);
}

void RingAllReduce::Run(void* buffer) {
  if (count_ == 0) return;
  if (!buffer) throw InvalidArgument("ring all-reduce: null buffer for count " +
                                     std::to_string(count_));
  const DType dt = options_.dtype;
  const std::size_t N = transport_.size(), es = SizeOf(dt);
  const std::size_t seg = detail::SegmentColumns(options_, es);
  char* data = static_cast<char*>(buffer);
  const std::size_t q = count_ / N, rest = count_ - q * N;
  if (N > 1 && q > 0) RingPass(transport_, dt, data, q, scratch_.data(), seg);
  if (N > 1 && rest > 0) {
    char* pad = scratch_.data() + std::max<std::size_t>(q, 1) * es;  // the rest, zero-padded
    std::memset(pad, 0, N * es);
    std::memcpy(pad, data + q * N * es, rest * es);
    RingPass(transport_, dt, pad, 1, scratch_.data(), seg);
    std::memcpy(data + q * N * es, pad, rest * es);
  }
  if (options_.op == ReduceOp::kAverage) {
    if (dt == DType::kFloat32)
      Eigen::Map<Eigen::ArrayXf>(static_cast<float*>(buffer), count_) *= 1.0f / N;
    else
      Eigen::Map<Eigen::ArrayXd>(static_cast<double*>(buffer), count_) *= 1.0 / N;
  }
}

}  // namespace cerar
