// CPU compute back end: Encode and Decode are GEMMs on Eigen maps of the caller's strided rows
// (no copies), Step is one fused elementwise pass. float32 and float64 buffers; the matrices are
// converted to the buffer's precision once, in SetMatrices. With Accumulation::kFloat64 a
// float32 run widens each column block to float64, computes with the float64 matrices and
// rounds each result once (the wide path; for float64 buffers it is the plain one). With
// Accumulation::kFloat64State the rows are float64 and only the packets and the decoded result
// are rounded.
#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/backend.h"
#include "accumulation_rules.h"
#include "wide_step.h"

namespace cerar {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using StridedMap = Eigen::Map<RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using ConstStridedMap = Eigen::Map<const RowMat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;

class CpuBackend final : public ComputeBackend {
 public:
  static constexpr std::size_t kBlockBytes = 16 << 10;  // per row, for Encode and Decode

  MemorySpace memory_space() const override { return MemorySpace::kHost; }
  bool Supports(DType dtype) const override {
    return dtype == DType::kFloat32 || dtype == DType::kFloat64;
  }

  bool SupportsAccumulation(DType dtype, Accumulation) const override {
    return Supports(dtype);
  }
  void SetAccumulation(Accumulation accumulation) override { accumulation_ = accumulation; }

  void* Allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    if (bytes > std::numeric_limits<std::size_t>::max() - 63) throw std::bad_alloc();
    // 64-byte alignment for vector loads; aligned_alloc wants a multiple of the alignment.
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);  // fault the pages in here, not in the first (timed) Run
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }

  void SetMatrices(const MatrixXd& encoder, const MatrixXd& decoder) override {
    if (decoder.rows() != decoder.cols() || encoder.cols() != decoder.rows())
      throw InvalidArgument("cpu backend: encoder is " + std::to_string(encoder.rows()) + "x" +
                            std::to_string(encoder.cols()) + " and decoder " +
                            std::to_string(decoder.rows()) + "x" +
                            std::to_string(decoder.cols()) + ", expected L x c and c x c");
    e64_ = encoder;
    d64_ = decoder;
    e32_ = encoder.cast<float>();
    d32_ = decoder.cast<float>();
  }

  void Encode(DType dtype, const void* g, std::size_t m, std::size_t col0, std::size_t cols,
              int kc, RowRange rows, void* enc, std::size_t ld) override {
    CheckRows("Encode", rows, e64_.rows());
    if (state64(dtype))
      EncodeWide(static_cast<const float*>(g), m, col0, cols, kc, rows, static_cast<double*>(enc),
                 ld);
    else if (dtype == DType::kFloat32 && wide())
      EncodeWide(static_cast<const float*>(g), m, col0, cols, kc, rows, static_cast<float*>(enc),
                 ld);
    else if (dtype == DType::kFloat32)
      EncodeT<float>(e32_, static_cast<const float*>(g), m, col0, cols, kc, rows,
                     static_cast<float*>(enc), ld);
    else if (dtype == DType::kFloat64)
      EncodeT<double>(e64_, static_cast<const double*>(g), m, col0, cols, kc, rows,
                      static_cast<double*>(enc), ld);
    else
      Unsupported(dtype);
  }

  void Step(DType dtype, const void* e_now, const void* y_prev, const void* e_back, void* x,
            void* obs, std::size_t len) override {
    if (state64(dtype))  // c <= 2N: the float64-state step without feedback rows
      StepWithFeedback(dtype, e_now, y_prev, e_back, nullptr, x, obs, nullptr, len);
    else if (dtype == DType::kFloat32 && wide())
      StepWide(static_cast<const float*>(e_now), static_cast<const float*>(y_prev),
               static_cast<const float*>(e_back), static_cast<float*>(x),
               static_cast<float*>(obs), len);
    else if (dtype == DType::kFloat32)
      StepT<float>(static_cast<const float*>(e_now), static_cast<const float*>(y_prev),
                   static_cast<const float*>(e_back), static_cast<float*>(x),
                   static_cast<float*>(obs), len);
    else if (dtype == DType::kFloat64)
      StepT<double>(static_cast<const double*>(e_now), static_cast<const double*>(y_prev),
                    static_cast<const double*>(e_back), static_cast<double*>(x),
                    static_cast<double*>(obs), len);
    else
      Unsupported(dtype);
  }

  bool FeedsBackRounding(DType dtype) const override {
    return detail::RoundingFedBack(dtype, accumulation_);
  }

  std::size_t StateElementBytes(DType dtype) const override {
    return state64(dtype) ? sizeof(double) : SizeOf(dtype);
  }

  void StepWithFeedback(DType dtype, const void* e_now, const void* y_prev, const void* e_back,
                        const void* feedback_in, void* x, void* obs, void* feedback_out,
                        std::size_t len) override {
    if (!FeedsBackRounding(dtype)) {
      ComputeBackend::StepWithFeedback(dtype, e_now, y_prev, e_back, feedback_in, x, obs,
                                       feedback_out, len);
      return;
    }
    if (state64(dtype))
      StepWideFeedback(static_cast<const double*>(e_now), static_cast<const float*>(y_prev),
                       static_cast<const double*>(e_back), static_cast<const double*>(feedback_in),
                       static_cast<float*>(x), static_cast<double*>(obs),
                       static_cast<double*>(feedback_out), len);
    else
      StepWideFeedback(static_cast<const float*>(e_now), static_cast<const float*>(y_prev),
                       static_cast<const float*>(e_back), static_cast<const float*>(feedback_in),
                       static_cast<float*>(x), static_cast<float*>(obs),
                       static_cast<float*>(feedback_out), len);
  }

  void Scale(DType dtype, void* x, std::size_t len, double scale) override {
    const auto n = static_cast<Eigen::Index>(len);
    if (dtype == DType::kFloat32)
      Eigen::Map<Vec<float>>(static_cast<float*>(x), n) *= static_cast<float>(scale);
    else if (dtype == DType::kFloat64)
      Eigen::Map<Vec<double>>(static_cast<double*>(x), n) *= scale;
    else
      Unsupported(dtype);
  }

  void Decode(DType dtype, const void* obs, std::size_t ld, void* g, std::size_t m,
              std::size_t col0, std::size_t cols, int kc, double scale) override {
    if (state64(dtype))
      DecodeWide(static_cast<const double*>(obs), ld, static_cast<float*>(g), m, col0, cols, kc,
                 scale);
    else if (dtype == DType::kFloat32 && wide())
      DecodeWide(static_cast<const float*>(obs), ld, static_cast<float*>(g), m, col0, cols, kc,
                 scale);
    else if (dtype == DType::kFloat32)
      DecodeT<float>(d32_, static_cast<const float*>(obs), ld, static_cast<float*>(g), m, col0,
                     cols, kc, static_cast<float>(scale));
    else if (dtype == DType::kFloat64)
      DecodeT<double>(d64_, static_cast<const double*>(obs), ld, static_cast<double*>(g), m, col0,
                      cols, kc, scale);
    else
      Unsupported(dtype);
  }

 private:
  [[noreturn]] static void Unsupported(DType dtype) {
    throw InvalidArgument("cpu backend: dtype " + ToString(dtype) + " not supported, use f32 or f64");
  }

  static void CheckRows(const char* call, RowRange rows, Eigen::Index n) {
    // In Eigen::Index (64 bits): first + count overflows an int for first near INT_MAX.
    const Eigen::Index first = rows.first, end = first + rows.count;
    if (rows.first < 0 || rows.count < 0 || end > n)
      throw InvalidArgument(std::string("cpu backend ") + call + ": rows [" +
                            std::to_string(first) + ", " + std::to_string(end) + ") outside [0, " +
                            std::to_string(n) + ")");
  }

  void CheckKc(int kc, Eigen::Index c) const {
    if (kc < 1 || kc > c)
      throw InvalidArgument("cpu backend: kc = " + std::to_string(kc) + " outside [1, c = " +
                            std::to_string(c) + "]");
  }

  template <typename T>
  void EncodeT(const RowMat<T>& E, const T* g, std::size_t m, std::size_t col0, std::size_t cols,
               int kc, RowRange rows, T* enc, std::size_t ld) const {
    CheckKc(kc, E.cols());
    if (rows.count == 0) return;
    const auto Er = E.block(rows.first, 0, rows.count, kc);
    T* out = enc + std::size_t(rows.first) * ld;
    // Column blocks keep the kc + rows rows of a block in cache (cerar-bench-compute: up to 1.6x
    // over one GEMM on the whole range at c = 64).
    for (std::size_t b = col0; b < col0 + cols; b += kBlockBytes / sizeof(T)) {
      const std::size_t w = std::min(kBlockBytes / sizeof(T), col0 + cols - b);
      ConstStridedMap<T> G(g + b, kc, w, Eigen::OuterStride<>(m));
      StridedMap<T> X(out + b, rows.count, w, Eigen::OuterStride<>(ld));
      X.noalias() = Er * G;  // (rows x kc)(kc x w): padding components read as zero
    }
  }

  template <typename T>
  static void StepT(const T* e_now, const T* y_prev, const T* e_back, T* x, T* obs,
                    std::size_t len) {
    // tmp = y_prev - e_back is written to obs first (obs may alias y_prev), then x reads it.
    using M = Eigen::Map<const Vec<T>>;
    using W = Eigen::Map<Vec<T>>;
    const Eigen::Index n = static_cast<Eigen::Index>(len);
    if (obs) {
      W o(obs, n);
      if (y_prev && e_back) o = M(y_prev, n) - M(e_back, n);
      else if (y_prev) { if (obs != y_prev) o = M(y_prev, n); }
      else if (e_back) o = -M(e_back, n);
      else o.setZero();
      if (x) {
        if (e_now) W(x, n) = M(e_now, n) + M(obs, n);
        else W(x, n) = M(obs, n);
      }
      return;
    }
    if (!x) return;
    W out(x, n);
    if (e_now && y_prev && e_back) out = M(e_now, n) + (M(y_prev, n) - M(e_back, n));
    else if (e_now && y_prev) out = M(e_now, n) + M(y_prev, n);
    else if (e_now && e_back) out = M(e_now, n) - M(e_back, n);
    else if (y_prev && e_back) out = M(y_prev, n) - M(e_back, n);
    else if (e_now) out = M(e_now, n);
    else if (y_prev) out = M(y_prev, n);
    else if (e_back) out = -M(e_back, n);
    else out.setZero();
  }

  template <typename T>
  void DecodeT(const RowMat<T>& D, const T* obs, std::size_t ld, T* g, std::size_t m,
               std::size_t col0, std::size_t cols, int kc, T scale) const {
    CheckKc(kc, D.rows());
    for (std::size_t b = col0; b < col0 + cols; b += kBlockBytes / sizeof(T)) {
      const std::size_t w = std::min(kBlockBytes / sizeof(T), col0 + cols - b);
      ConstStridedMap<T> O(obs + b, D.cols(), w, Eigen::OuterStride<>(ld));
      StridedMap<T> G(g + b, kc, w, Eigen::OuterStride<>(m));
      G.noalias() += D.topRows(kc) * O;  // rows k < kc only: padding is never written
      if (scale != T(1)) G *= scale;
    }
  }

  bool wide() const { return accumulation_ != Accumulation::kBuffer; }
  bool state64(DType dtype) const { return detail::Float64Rows(dtype, accumulation_); }

  // The wide path: a float64 copy of each column block (the block size in float64 elements),
  // the float64 GEMM, one rounding of the result (none where the rows are float64, S = double).
  template <typename S>
  void EncodeWide(const float* g, std::size_t m, std::size_t col0, std::size_t cols, int kc,
                  RowRange rows, S* enc, std::size_t ld) {
    CheckKc(kc, e64_.cols());
    if (rows.count == 0) return;
    const auto Er = e64_.block(rows.first, 0, rows.count, kc);
    S* out = enc + std::size_t(rows.first) * ld;
    for (std::size_t b = col0; b < col0 + cols; b += kBlockBytes / sizeof(double)) {
      const std::size_t w = std::min(kBlockBytes / sizeof(double), col0 + cols - b);
      wide_in_ = ConstStridedMap<float>(g + b, kc, w, Eigen::OuterStride<>(m)).cast<double>();
      wide_out_.noalias() = Er * wide_in_;
      StridedMap<S>(out + b, rows.count, w, Eigen::OuterStride<>(ld)) = wide_out_.cast<S>();
    }
  }

  // The wide step (wide_step.h, shared with the CUDA kernel) over `len` elements in ascending
  // order: element i reads y_prev[i] before it writes obs[i], which with float64 rows (S =
  // double) may overlap y elements up to i (backend.h, StateElementBytes), already read.
  template <typename S>
  static void StepWideFeedback(const S* e_now, const float* y_prev, const S* e_back,
                               const S* feedback_in, float* x, S* obs, S* feedback_out,
                               std::size_t len) {
    for (std::size_t i = 0; i < len; ++i)
      detail::WideStepAt<S>(e_now, y_prev, e_back, feedback_in, x, obs, feedback_out, i);
  }

  // tmp = y_prev - e_back exactly (float64), then obs = fl(tmp) and x = fl(e_now + tmp): x
  // rounded once. Every input of element i is read before element i is written (aliasing).
  static void StepWide(const float* e_now, const float* y_prev, const float* e_back, float* x,
                       float* obs, std::size_t len) {
    StepWideFeedback<float>(e_now, y_prev, e_back, nullptr, x, obs, nullptr, len);
  }


  template <typename S>
  void DecodeWide(const S* obs, std::size_t ld, float* g, std::size_t m, std::size_t col0,
                  std::size_t cols, int kc, double scale) {
    CheckKc(kc, d64_.rows());
    for (std::size_t b = col0; b < col0 + cols; b += kBlockBytes / sizeof(double)) {
      const std::size_t w = std::min(kBlockBytes / sizeof(double), col0 + cols - b);
      wide_in_ = ConstStridedMap<S>(obs + b, d64_.cols(), w, Eigen::OuterStride<>(ld))
                     .template cast<double>();
      StridedMap<float> G(g + b, kc, w, Eigen::OuterStride<>(m));
      wide_out_ = G.cast<double>();
      wide_out_.noalias() += d64_.topRows(kc) * wide_in_;
      if (scale != 1.0) wide_out_ *= scale;
      G = wide_out_.cast<float>();
    }
  }

  RowMat<double> e64_, d64_;
  RowMat<float> e32_, d32_;
  Accumulation accumulation_ = Accumulation::kBuffer;
  RowMat<double> wide_in_, wide_out_;  // the wide path's column blocks, reused
};

}  // namespace

std::unique_ptr<ComputeBackend> CreateCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace cerar
