// CUDA compute back end: Encode and Decode as one cuBLAS GEMM each (row-major operands handed
// to column-major cuBLAS as their transposes), Step as one fused kernel (kernels.cu). Float32
// buffers under a wide accumulation (kFloat64, kFloat64Feedback, kFloat64State) take the wide
// kernels instead (wide_kernels.cu): float64 arithmetic, one rounding per stored result, as the
// CPU back end.
#include "cerar/runtime/cuda/cuda_backend.h"

#include <cublas_v2.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../accumulation_rules.h"
#include "arguments.h"
#include "checks.h"
#include "device_buffer.h"
#include "kernels.h"

namespace cerar {
namespace {

using cuda::DeviceBuffer;
using cuda::DeviceGuard;

constexpr int kDTypes = 4;
int Index(DType dtype) { return static_cast<int>(dtype); }

cudaDataType_t DataType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kFloat64: return CUDA_R_64F;
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

// float32 accumulation for every type but float64; alpha/beta are then float.
bool IsDouble(DType dtype) { return dtype == DType::kFloat64; }

class CudaBackend final : public ComputeBackend {
 public:
  explicit CudaBackend(cudaStream_t stream) : stream_(stream) {
    CERAR_CUDA_CHECK(cudaGetDevice(&device_));
    int sms = 0;
    CERAR_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    max_blocks_ = sms * 8;  // a few waves; the step kernel is grid-stride
    CERAR_CUBLAS_CHECK(cublasCreate(&handle_));
    try {
      CERAR_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
      // Pure float32 arithmetic for float32 buffers (no TF32), so results match the CPU; and
      // for bf16/f16 buffers every reduction (split-K included) stays in float32 instead of
      // being rounded to the buffer type on the way.
      CERAR_CUBLAS_CHECK(cublasSetMathMode(
          handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
      CERAR_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
    } catch (...) {
      CERAR_CUBLAS_REPORT(cublasDestroy(handle_));
      throw;
    }
  }

  ~CudaBackend() override {
    try {
      // On the back end's device, whichever is current now: the legacy stream (nullptr) is the
      // current device's, and the handle and the buffers belong to this one.
      DeviceGuard guard(device_);
      // Outstanding work may still read the matrices.
      CERAR_CUDA_REPORT(cudaStreamSynchronize(stream_));
      CERAR_CUBLAS_REPORT(cublasDestroy(handle_));
      for (DeviceBuffer& matrix : enc_) matrix = DeviceBuffer();  // freed inside the guard
      for (DeviceBuffer& matrix : dec_) matrix = DeviceBuffer();
      scratch_ = DeviceBuffer();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cerar: ignored in cleanup: CUDA back end: %s\n", e.what());
    }
  }

  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const void* device_stream() const override { return stream_; }
  bool Supports(DType dtype) const override {
    switch (dtype) {
      case DType::kFloat32:
      case DType::kFloat64:
      case DType::kBFloat16:
      case DType::kFloat16:
        return true;
    }
    return false;
  }
  bool SupportsAccumulation(DType dtype, Accumulation accumulation) const override {
    return Supports(dtype) && cuda::SupportsAccumulation(dtype, accumulation);
  }
  // Any accumulation, as on the CPU: whether a dtype can run with it is checked per call
  // (cuda::CheckAccumulation) and by the engine before a run (SupportsAccumulation).
  void SetAccumulation(Accumulation accumulation) override { accumulation_ = accumulation; }
  bool FeedsBackRounding(DType dtype) const override {
    return detail::RoundingFedBack(dtype, accumulation_);
  }
  std::size_t StateElementBytes(DType dtype) const override {
    return state64(dtype) ? sizeof(double) : SizeOf(dtype);
  }

  void* Allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    CERAR_CUDA_CHECK(cudaMalloc(&ptr, bytes));
    return ptr;
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    DeviceGuard guard(device_);
    CERAR_CUDA_CHECK(cudaFree(ptr));  // synchronises: no kernel can still be using it
  }

  void SetMatrices(const MatrixXd& encoder, const MatrixXd& decoder) override {
    cuda::CheckMatrices(encoder, decoder);
    DeviceGuard guard(device_);
    // Work already enqueued may still read the old matrices.
    CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const auto L = static_cast<std::size_t>(encoder.rows());
    const auto c = static_cast<std::size_t>(encoder.cols());
    // MatrixXd is row-major: the device copies keep that layout (row t of E at t * c).
    std::array<DeviceBuffer, kDTypes> enc, dec;
    DeviceBuffer enc64(L * c * 8), dec64(c * c * 8);
    CERAR_CUDA_CHECK(cudaMemcpyAsync(enc64.get(), encoder.data(), L * c * 8,
                                     cudaMemcpyHostToDevice, stream_));
    CERAR_CUDA_CHECK(cudaMemcpyAsync(dec64.get(), decoder.data(), c * c * 8,
                                     cudaMemcpyHostToDevice, stream_));
    for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      enc[Index(t)] = DeviceBuffer(L * c * SizeOf(t));
      dec[Index(t)] = DeviceBuffer(c * c * SizeOf(t));
      cuda::LaunchConvertFromDouble(t, static_cast<const double*>(enc64.get()),
                                    enc[Index(t)].get(), L * c, stream_);
      cuda::LaunchConvertFromDouble(t, static_cast<const double*>(dec64.get()),
                                    dec[Index(t)].get(), c * c, stream_);
    }
    // The host matrices and the float64 staging copies must outlive the copies and kernels.
    CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
    enc[Index(DType::kFloat64)] = std::move(enc64);
    dec[Index(DType::kFloat64)] = std::move(dec64);
    enc_ = std::move(enc);
    dec_ = std::move(dec);
    L_ = static_cast<int>(L);
    c_ = static_cast<int>(c);
  }

  void Encode(DType dtype, const void* g, std::size_t m, std::size_t col0, std::size_t cols,
              int kc, RowRange rows, void* enc, std::size_t ld) override {
    cuda::CheckEncode(dtype, g, m, col0, cols, kc, c_, rows.first, rows.count, L_, enc, ld);
    cuda::CheckAccumulation("Encode", dtype, accumulation_);
    if (cols == 0 || rows.count == 0) return;
    DeviceGuard guard(device_);
    if (wide(dtype)) {
      cuda::LaunchWideEncode(state64(dtype), matrix64(enc_), c_, rows.first, rows.count, kc,
                             static_cast<const float*>(g), m, col0, cols, enc, ld, max_blocks_,
                             stream_);
      return;
    }
    const std::size_t es = SizeOf(dtype);
    char* out = static_cast<char*>(enc) + (std::size_t(rows.first) * ld + col0) * es;
    // Row-major enc rows (rows x cols, stride ld) = E[rows, :kc] (stride c) * G (kc x cols,
    // stride m); column-major that is enc^T = G^T * E^T.
    const char* in = static_cast<const char*>(g) + col0 * es;
    const char* e = static_cast<const char*>(enc_[Index(dtype)].get()) +
                    std::size_t(rows.first) * std::size_t(c_) * es;
    Gemm(dtype, cols, rows.count, kc, 1.0, in, m, e, c_, 0.0, out, ld);
  }

  void Step(DType dtype, const void* e_now, const void* y_prev, const void* e_back, void* x,
            void* obs, std::size_t len) override {
    cuda::CheckStep(dtype);
    cuda::CheckAccumulation("Step", dtype, accumulation_);
    if (len == 0 || (x == nullptr && obs == nullptr)) return;
    DeviceGuard guard(device_);
    if (wide(dtype))  // c <= 2N, or kFloat64: the wide step without feedback rows
      StepWide(e_now, y_prev, e_back, nullptr, x, obs, nullptr, len);
    else
      cuda::LaunchStep(dtype, e_now, y_prev, e_back, x, obs, len, max_blocks_, stream_);
  }

  void StepWithFeedback(DType dtype, const void* e_now, const void* y_prev, const void* e_back,
                        const void* feedback_in, void* x, void* obs, void* feedback_out,
                        std::size_t len) override {
    if (!FeedsBackRounding(dtype)) {
      ComputeBackend::StepWithFeedback(dtype, e_now, y_prev, e_back, feedback_in, x, obs,
                                       feedback_out, len);
      return;
    }
    if (len == 0 || (x == nullptr && obs == nullptr)) return;
    DeviceGuard guard(device_);
    StepWide(e_now, y_prev, e_back, feedback_in, x, obs, feedback_out, len);
  }

  void Decode(DType dtype, const void* obs, std::size_t ld, void* g, std::size_t m,
              std::size_t col0, std::size_t cols, int kc, double scale) override {
    cuda::CheckDecode(dtype, obs, ld, g, m, col0, cols, kc, c_, scale);
    cuda::CheckAccumulation("Decode", dtype, accumulation_);
    if (cols == 0) return;
    DeviceGuard guard(device_);
    if (wide(dtype)) {
      cuda::LaunchWideDecode(state64(dtype), matrix64(dec_), c_, kc, obs, ld,
                             static_cast<float*>(g), m, col0, cols, scale, max_blocks_, stream_);
      return;
    }
    const std::size_t es = SizeOf(dtype);
    // Row-major g (kc x cols, stride m) = scale * (g + D[:kc, :] (stride c) * obs (c x cols,
    // stride ld)); column-major: g^T = scale * obs^T * D^T + scale * g^T.
    const char* o = static_cast<const char*>(obs) + col0 * es;
    char* out = static_cast<char*>(g) + col0 * es;
    Gemm(dtype, cols, kc, c_, scale, o, ld, dec_[Index(dtype)].get(), c_, scale, out, m);
  }

  void Scale(DType dtype, void* x, std::size_t len, double scale) override {
    cuda::CheckStep(dtype);
    if (len == 0) return;
    DeviceGuard guard(device_);
    // float32 arithmetic for every type but float64, as in Step.
    const float scale32 = static_cast<float>(scale);
    const void* alpha = IsDouble(dtype) ? static_cast<const void*>(&scale) : &scale32;
    const cudaDataType_t exec = IsDouble(dtype) ? CUDA_R_64F : CUDA_R_32F;
    CERAR_CUBLAS_CHECK(cublasScalEx_64(handle_, static_cast<std::int64_t>(len), alpha, exec, x,
                                       DataType(dtype), 1, exec));
  }

  void Synchronize() override {
    DeviceGuard guard(device_);
    CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // The engines' preparation: a float64-state step may stage up to max_step_len floats of y.
  void Prepare(DType dtype, std::size_t max_step_len) override {
    if (!state64(dtype) || max_step_len == 0) return;
    DeviceGuard guard(device_);
    Scratch(max_step_len * sizeof(float));
  }

 private:
  // The wide kernels are for float32 buffers; float64 buffers compute in float64 already.
  bool wide(DType dtype) const { return detail::WideArithmetic(dtype, accumulation_); }
  bool state64(DType dtype) const { return detail::Float64Rows(dtype, accumulation_); }
  static const double* matrix64(const std::array<DeviceBuffer, kDTypes>& m) {
    return static_cast<const double*>(m[Index(DType::kFloat64)].get());
  }

  // The wide step. With float64 rows the engine receives y(t) into the upper half of the span
  // that the observation then fills (backend.h, StateElementBytes): a sequential loop may widen
  // in place (the CPU does, in ascending order), parallel threads may not, since obs[i] covers
  // y elements 2i - len and 2i - len + 1, which other threads read. Such a y is first copied to
  // scratch memory on the same stream (4 bytes per element more traffic, one segment's worth
  // of memory, allocated by the engine's Prepare; a direct caller's longer step grows it).
  // Same-pointer float rows are elementwise and need no copy.
  void StepWide(const void* e_now, const void* y_prev, const void* e_back,
                const void* feedback_in, void* x, void* obs, void* feedback_out,
                std::size_t len) {
    const bool rows64 = accumulation_ == Accumulation::kFloat64State;
    const std::size_t row_bytes = len * (rows64 ? sizeof(double) : sizeof(float));
    const std::size_t y_bytes = len * sizeof(float);
    if (obs && y_prev && !(obs == y_prev && !rows64) &&
        Overlap(obs, row_bytes, y_prev, y_bytes)) {
      void* staged = Scratch(y_bytes);
      CERAR_CUDA_CHECK(cudaMemcpyAsync(staged, y_prev, y_bytes, cudaMemcpyDeviceToDevice,
                                       stream_));
      y_prev = staged;
    }
    cuda::LaunchWideStep(rows64, e_now, static_cast<const float*>(y_prev), e_back, feedback_in,
                         static_cast<float*>(x), obs, feedback_out, len, max_blocks_, stream_);
  }

  static bool Overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
    return pa < pb + b_bytes && pb < pa + a_bytes;
  }

  // At least `bytes` of device memory private to this back end, valid until the next call.
  void* Scratch(std::size_t bytes) {
    if (bytes > scratch_bytes_) {
      // Queued kernels may still read the old scratch; cudaFree would wait for them anyway.
      CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
      scratch_ = DeviceBuffer(bytes);
      scratch_bytes_ = bytes;
    }
    return scratch_.get();
  }

  // Column-major C (rows x n, ldc) = alpha * A (rows x k, lda) * B (k x n, ldb) + beta * C.
  void Gemm(DType dtype, std::size_t rows, std::size_t n, std::size_t k, double alpha,
            const void* A, std::size_t lda, const void* B, std::size_t ldb, double beta, void* C,
            std::size_t ldc) {
    const cudaDataType_t type = DataType(dtype);
    const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
    const void* pa = IsDouble(dtype) ? static_cast<const void*>(&alpha) : &alpha32;
    const void* pb = IsDouble(dtype) ? static_cast<const void*>(&beta) : &beta32;
    const cublasComputeType_t compute = IsDouble(dtype) ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    CERAR_CUBLAS_CHECK(cublasGemmEx_64(
        handle_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<std::int64_t>(rows),
        static_cast<std::int64_t>(n), static_cast<std::int64_t>(k), pa, A, type,
        static_cast<std::int64_t>(lda), B, type, static_cast<std::int64_t>(ldb), pb, C, type,
        static_cast<std::int64_t>(ldc), compute, CUBLAS_GEMM_DEFAULT));
  }

  cudaStream_t stream_;
  int device_ = 0;
  int max_blocks_ = 1;
  cublasHandle_t handle_ = nullptr;
  int L_ = 0, c_ = 0;  // c_ = 0 until SetMatrices
  std::array<DeviceBuffer, kDTypes> enc_, dec_;  // E (L x c) and D (c x c) per dtype, row-major
  Accumulation accumulation_ = Accumulation::kBuffer;
  DeviceBuffer scratch_;  // StepWide's staged y
  std::size_t scratch_bytes_ = 0;
};

}  // namespace

std::unique_ptr<ComputeBackend> CreateCudaBackend(cudaStream_t stream) {
  return std::make_unique<CudaBackend>(stream);
}

}  // namespace cerar
