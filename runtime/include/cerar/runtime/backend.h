#pragma once
// A compute back end does the arithmetic of the protocol engine on one rank's buffers: encode,
// the fused round step, and decode (PROTOCOL.md §2-§3). The engine owns the schedule; a back
// end owns only memory and kernels. CPU (Eigen) and CUDA (cuBLAS + fused kernels) implement it.
//
// Layout (PROTOCOL.md §1): the caller's buffer g holds n elements; component k is elements
// [k m, (k+1) m) with m = ceil(n / c); the tail of the last component(s) is implicit zero
// padding and is never read or written. Encoded vectors and observations are rows of m
// elements. Every call works on a column range [col0, col0 + cols) of those rows so the engine
// can pipeline segments; `kc` (1 … c) is how many components have data in that range (c, or
// fewer in the padded tail).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cerar/format/design.h"
#include "cerar/runtime/transport.h"

namespace cerar {

// How Encode, Step and Decode compute (AllReduceOptions::accumulation).
//   kBuffer   in the buffer's dtype: every product, sum and difference is rounded to it.
//   kFloat64  in float64 from the buffer's values, each stored result (an encoded vector, a
//             packet, an observation, a decoded component) rounded once to the buffer's dtype.
//             Packets and workspace stay in the buffer's dtype, so traffic is unchanged; the
//             rounding error of a float32 run drops (docs/error-model.md, "float32+acc64").
//   kFloat64Feedback  kFloat64, and a float32 run also feeds the rounding of each packet back
//             into the ring once per lap (FeedsBackRounding, StepWithFeedback): the ring's
//             rounding then grows linearly over the laps, a pattern the decoder amplifies far
//             less than fresh errors (docs/error-model.md, "Rounding feedback"). N more
//             workspace rows; same bytes sent. The model's "float32+acc64+feedback".
//   kFloat64State  kFloat64Feedback, and a float32 run keeps its workspace rows (encoded
//             vectors, observations, feedback) in float64 (StateElementBytes): nothing a rank
//             keeps is rounded, only the packets it sends (fed back where c > 2N) and the decoded
//             result. Twice the workspace of kFloat64Feedback; same bytes sent. The model's
//             "float32+state64" (docs/error-model.md, "Float64 state").
enum class Accumulation { kBuffer, kFloat64, kFloat64Feedback, kFloat64State };
// "buffer" | "f64" | "f64+feedback" | "f64-state"
std::string ToString(Accumulation accumulation);
Accumulation ParseAccumulation(const std::string& name);
// The error model's name for the arithmetic a run of `dtype` buffers with `accumulation` computes
// in, which is the key of the design's Figures::predicted_error: "float32", "float32+acc64",
// "float32+acc64+feedback", "float32+state64"; "float64" for float64 buffers whatever the
// accumulation; "bfloat16" with kBuffer. Anything else (f16, bf16 with a wide accumulation) has
// no model: InvalidArgument.
std::string ModelArithmetic(DType dtype, Accumulation accumulation);

// Rows [first, first + count) of the encoder.
struct RowRange {
  int first = 0, count = 0;
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual MemorySpace memory_space() const = 0;
  // The cudaStream_t a device back end enqueues on (nullptr: the legacy stream, or the CPU).
  virtual const void* device_stream() const { return nullptr; }
  // Whether Encode/Step/Decode/Scale accept buffers of this dtype (CPU: f32, f64; CUDA: all).
  virtual bool Supports(DType dtype) const = 0;
  // Whether it can compute on `dtype` buffers with `accumulation` (CPU: all four, for f32 and
  // f64; CUDA: all four for f32 and f64, kBuffer only for bf16 and f16).
  virtual bool SupportsAccumulation(DType dtype, Accumulation accumulation) const {
    return accumulation == Accumulation::kBuffer && Supports(dtype);
  }

  // Workspace memory in the back end's space. The CPU back end returns it zeroed (every page
  // touched now, so a first Run does not pay the page faults inside its timing).
  virtual void* Allocate(std::size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;

  // Takes this rank's encoder E (L x c) and decoder D (c x c), converted to the back end's
  // compute precision once, before any run.
  virtual void SetMatrices(const MatrixXd& encoder, const MatrixXd& decoder) = 0;

  // How the following Encode, Step and Decode calls compute; kBuffer until set. Throws
  // InvalidArgument for an accumulation the back end does not support.
  virtual void SetAccumulation(Accumulation accumulation);

  // enc[t * ld + col] = sum_{k < kc} E[t, k] * g[k * m + col] for t in `rows` (within [0, L)),
  // col in [col0, col0 + cols). The engine encodes row 0 just before the first send and the
  // other rows while earlier messages are on the link.
  virtual void Encode(DType dtype, const void* g, std::size_t m, std::size_t col0,
                      std::size_t cols, int kc, RowRange rows, void* enc, std::size_t ld) = 0;

  // Fused round step on `len` elements: tmp = y_prev - e_back; if obs: obs = tmp;
  // if x: x = e_now + tmp. A null y_prev / e_back / e_now reads as zero.
  // Aliasing: obs may be the same pointer as y_prev (the engine stores each observation in place
  // of the received vector, which keeps the workspace at L + 2 rows plus segment-sized send
  // slots), and x may be the same pointer as e_now or y_prev when obs is null (the ring's
  // in-place add, x = x + y); elementwise only. With every input null, x is zeroed; with only
  // y_prev, it is a copy.
  virtual void Step(DType dtype, const void* e_now, const void* y_prev, const void* e_back,
                    void* x, void* obs, std::size_t len) = 0;

  // Whether the engine must call StepWithFeedback instead of Step for `dtype` buffers under the
  // current accumulation (CPU and CUDA: float32 with kFloat64Feedback or kFloat64State).
  virtual bool FeedsBackRounding(DType /*dtype*/) const { return false; }

  // Bytes per element of the workspace rows (encoded vectors, observations, feedback) for
  // `dtype` buffers under the current accumulation: SizeOf(dtype), or 8 where the back end keeps
  // them in float64 (CPU and CUDA: float32 with kFloat64State). Packets (x, y) are always
  // `dtype`. With float64 rows, enc in Encode, e_now, e_back, obs and the feedback pointers in
  // Step and StepWithFeedback, and obs in Decode point to doubles; g, x and y_prev to `dtype`.
  // The engine receives y(t) of a segment into the upper half of that segment's span of its row,
  // so that obs may still overwrite it in place (element i of obs covers bytes 8i … 8i+7 of the
  // span, y_prev's element i bytes 4 cols + 4i …, read first; ascending, no unread y is
  // overwritten). A back end that steps elements in parallel must stage such a y_prev first
  // (the CUDA back end copies it to scratch memory).
  virtual std::size_t StateElementBytes(DType dtype) const { return SizeOf(dtype); }

  // Step with rounding feedback (docs/error-model.md, "Rounding feedback"):
  //   tmp = y_prev - e_back + feedback_in;  if obs: obs = tmp;
  //   if x: x = fl(e_now + tmp) and, if feedback_out, feedback_out = feedback_in + (x - (e_now + tmp)).
  // feedback_in is what feedback_out held N rounds earlier: the sum of this rank's roundings on
  // the diagonal x starts. A null pointer reads as zero; feedback_out may alias feedback_in
  // (elementwise), the other aliasing as for Step. Throws InvalidArgument unless
  // FeedsBackRounding(dtype).
  virtual void StepWithFeedback(DType dtype, const void* e_now, const void* y_prev,
                                const void* e_back, const void* feedback_in, void* x, void* obs,
                                void* feedback_out, std::size_t len);

  // g[k * m + col] = scale * (g[k * m + col] + sum_r D[k, r] * obs[r * ld + col]) for k < kc,
  // col in [col0, col0 + cols).
  virtual void Decode(DType dtype, const void* obs, std::size_t ld, void* g, std::size_t m,
                      std::size_t col0, std::size_t cols, int kc, double scale) = 0;

  // x[i] = scale * x[i] for i < len (the ring's average).
  virtual void Scale(DType dtype, void* x, std::size_t len, double scale) = 0;

  // Blocks until all work issued so far is complete (no-op on the CPU).
  virtual void Synchronize() {}

  // Called by each coded engine at construction, after SetMatrices and SetAccumulation, with its
  // dtype and the longest `len` it will pass to Step or StepWithFeedback: a back end that needs
  // working memory for those calls allocates it now, so that no run allocates (a first run paid
  // for it inside its timing, and an out-of-memory failed it mid-protocol, after its peers had
  // started). The CUDA back end stages float64-state steps' y there; the default needs nothing.
  virtual void Prepare(DType /*dtype*/, std::size_t /*max_step_len*/) {}

  // Which coded engine's matrices the back end holds: each CodedAllReduce stamps its own id when
  // it loads them and checks it at every Run, so a back end shared by two coded engines fails by
  // name instead of running one with the other's design. (The accumulation is set again by each
  // engine's Run, so a coded engine and a ring may share a back end.)
  std::uint64_t holder() const { return holder_; }
  void set_holder(std::uint64_t holder) { holder_ = holder; }

 private:
  std::uint64_t holder_ = 0;
};

// CPU back end (Eigen); float32 and float64 buffers.
std::unique_ptr<ComputeBackend> CreateCpuBackend();

}  // namespace cerar
