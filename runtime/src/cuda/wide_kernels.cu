// The wide paths of the CUDA back end for float32 buffers (kernels.h): float64 arithmetic on the
// float32 values, one rounding per stored result, as the CPU back end computes them.
//
// cuBLAS cannot do this in one call (cublasGemmEx computes in float64 only on float64 operands),
// and widening copies of every block would double the traffic, so encode and decode are plain
// kernels: one thread per column, holding kRowsPerPass float64 accumulators, so each element of
// g (encode) or of the observations (decode) is loaded once per pass of kRowsPerPass output rows;
// the matrix entries are the same for every thread of a warp and come from cache. Sums run left
// to right over the components (nvcc contracts each product and sum into one fused multiply-add:
// float64 either way, far below the float32 rounding of the result).
#include <type_traits>

#include "../wide_step.h"
#include "checks.h"
#include "kernels.h"

namespace cerar::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerPass = 8;

unsigned Blocks(std::size_t work, int max_blocks) {
  std::size_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > std::size_t(max_blocks)) blocks = std::size_t(max_blocks);
  return blocks == 0 ? 1u : unsigned(blocks);
}

template <typename S>
__global__ void WideEncodeKernel(const double* E, int c, int first, int count, int kc,
                                 const float* g, std::size_t m, std::size_t col0,
                                 std::size_t cols, S* enc, std::size_t ld) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < cols;
       j += stride) {
    const std::size_t col = col0 + j;
    for (int t0 = 0; t0 < count; t0 += kRowsPerPass) {
      const double* Et = E + std::size_t(first + t0) * std::size_t(c);
      double acc[kRowsPerPass];
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r) acc[r] = 0.0;
      for (int k = 0; k < kc; ++k) {
        const double gk = double(g[std::size_t(k) * m + col]);
#pragma unroll
        for (int r = 0; r < kRowsPerPass; ++r)
          if (t0 + r < count) acc[r] += Et[std::size_t(r) * std::size_t(c) + std::size_t(k)] * gk;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r)
        if (t0 + r < count) enc[std::size_t(first + t0 + r) * ld + col] = static_cast<S>(acc[r]);
    }
  }
}

template <typename S>
__global__ void WideDecodeKernel(const double* D, int c, int kc, const S* obs, std::size_t ld,
                                 float* g, std::size_t m, std::size_t col0, std::size_t cols,
                                 double scale) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < cols;
       j += stride) {
    const std::size_t col = col0 + j;
    for (int k0 = 0; k0 < kc; k0 += kRowsPerPass) {
      double acc[kRowsPerPass];
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r)
        acc[r] = k0 + r < kc ? double(g[std::size_t(k0 + r) * m + col]) : 0.0;
      for (int q = 0; q < c; ++q) {
        const double o = double(obs[std::size_t(q) * ld + col]);
#pragma unroll
        for (int r = 0; r < kRowsPerPass; ++r)
          if (k0 + r < kc) acc[r] += D[std::size_t(k0 + r) * std::size_t(c) + std::size_t(q)] * o;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r)
        if (k0 + r < kc)
          g[std::size_t(k0 + r) * m + col] = static_cast<float>(scale == 1.0 ? acc[r]
                                                                            : acc[r] * scale);
    }
  }
}

template <typename S>
__global__ void WideStepKernel(const S* e_now, const float* y_prev, const S* e_back,
                               const S* feedback_in, float* x, S* obs, S* feedback_out,
                               std::size_t len) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < len; i += stride)
    detail::WideStepAt<S>(e_now, y_prev, e_back, feedback_in, x, obs, feedback_out, i);
}

// Kernel names for launch-failure messages: S is the workspace rows' type.
template <typename S> constexpr const char* Named(const char* if_double, const char* if_float) {
  return std::is_same_v<S, double> ? if_double : if_float;
}

template <typename S>
void Encode(const double* E, int c, int first, int count, int kc, const float* g,
            std::size_t m, std::size_t col0, std::size_t cols, void* enc, std::size_t ld,
            int max_blocks, cudaStream_t stream) {
  CERAR_CUDA_LAUNCH(Named<S>("WideEncodeKernel<double>", "WideEncodeKernel<float>"),
                    WideEncodeKernel<S><<<Blocks(cols, max_blocks), kThreads, 0, stream>>>(
                        E, c, first, count, kc, g, m, col0, cols, static_cast<S*>(enc), ld));
}

template <typename S>
void Decode(const double* D, int c, int kc, const void* obs, std::size_t ld, float* g,
            std::size_t m, std::size_t col0, std::size_t cols, double scale, int max_blocks,
            cudaStream_t stream) {
  CERAR_CUDA_LAUNCH(Named<S>("WideDecodeKernel<double>", "WideDecodeKernel<float>"),
                    WideDecodeKernel<S><<<Blocks(cols, max_blocks), kThreads, 0, stream>>>(
                        D, c, kc, static_cast<const S*>(obs), ld, g, m, col0, cols, scale));
}

template <typename S>
void Step(const void* e_now, const float* y_prev, const void* e_back, const void* feedback_in,
          float* x, void* obs, void* feedback_out, std::size_t len, int max_blocks,
          cudaStream_t stream) {
  CERAR_CUDA_LAUNCH(Named<S>("WideStepKernel<double>", "WideStepKernel<float>"),
                    WideStepKernel<S><<<Blocks(len, max_blocks), kThreads, 0, stream>>>(
                        static_cast<const S*>(e_now), y_prev, static_cast<const S*>(e_back),
                        static_cast<const S*>(feedback_in), x, static_cast<S*>(obs),
                        static_cast<S*>(feedback_out), len));
}

}  // namespace

void LaunchWideEncode(bool state64, const double* E, int c, int first, int count, int kc,
                      const float* g, std::size_t m, std::size_t col0, std::size_t cols,
                      void* enc, std::size_t ld, int max_blocks, cudaStream_t stream) {
  if (cols == 0 || count == 0) return;
  if (state64)
    Encode<double>(E, c, first, count, kc, g, m, col0, cols, enc, ld, max_blocks, stream);
  else
    Encode<float>(E, c, first, count, kc, g, m, col0, cols, enc, ld, max_blocks, stream);
}

void LaunchWideDecode(bool state64, const double* D, int c, int kc, const void* obs,
                      std::size_t ld, float* g, std::size_t m, std::size_t col0,
                      std::size_t cols, double scale, int max_blocks, cudaStream_t stream) {
  if (cols == 0 || kc == 0) return;
  if (state64)
    Decode<double>(D, c, kc, obs, ld, g, m, col0, cols, scale, max_blocks, stream);
  else
    Decode<float>(D, c, kc, obs, ld, g, m, col0, cols, scale, max_blocks, stream);
}

void LaunchWideStep(bool state64, const void* e_now, const float* y_prev, const void* e_back,
                    const void* feedback_in, float* x, void* obs, void* feedback_out,
                    std::size_t len, int max_blocks, cudaStream_t stream) {
  if (len == 0 || (x == nullptr && obs == nullptr)) return;
  if (state64)
    Step<double>(e_now, y_prev, e_back, feedback_in, x, obs, feedback_out, len, max_blocks,
                 stream);
  else
    Step<float>(e_now, y_prev, e_back, feedback_in, x, obs, feedback_out, len, max_blocks,
                stream);
}

}  // namespace cerar::cuda
