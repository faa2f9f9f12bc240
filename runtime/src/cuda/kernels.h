#pragma once
// Launchers for the fused kernels (kernels.cu). Plain C++ so the host code is compiled by the
// C++ compiler; only kernels.cu goes through nvcc.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "cerar/runtime/transport.h"

namespace cerar::cuda {

// Fused round step on `len` elements: tmp = y_prev - e_back; obs = tmp; x = e_now + tmp.
// Null inputs read as zero and null outputs are skipped: each combination is its own kernel
// instantiation (no per-element branches). Arithmetic is float32 (float64 for kFloat64).
// `max_blocks` caps the grid (a few waves of the device's SMs; the kernel is grid-stride).
void LaunchStep(DType dtype, const void* e_now, const void* y_prev, const void* e_back, void* x,
                void* obs, std::size_t len, int max_blocks, cudaStream_t stream);

// dst[i] = (T) src[i], rounding once from float64 to the buffer type.
void LaunchConvertFromDouble(DType dtype, const double* src, void* dst, std::size_t n,
                             cudaStream_t stream);

// The wide paths of float32 buffers (wide_kernels.cu; Accumulation::kFloat64, kFloat64Feedback,
// kFloat64State): float64 arithmetic on the float32 values, each stored result rounded once.
// `state64`: the workspace rows (enc, e_now, e_back, obs, feedback) are double, else float;
// g, x and y_prev are always float. E (L x c) and D (c x c) are the float64 matrices, row-major.

// enc[t * ld + col] = sum_{k < kc} E[t, k] g[k * m + col] for t in [first, first + count),
// col in [col0, col0 + cols).
void LaunchWideEncode(bool state64, const double* E, int c, int first, int count, int kc,
                      const float* g, std::size_t m, std::size_t col0, std::size_t cols,
                      void* enc, std::size_t ld, int max_blocks, cudaStream_t stream);

// g[k * m + col] = fl32(scale (g + sum_r D[k, r] obs[r * ld + col])) for k < kc.
void LaunchWideDecode(bool state64, const double* D, int c, int kc, const void* obs,
                      std::size_t ld, float* g, std::size_t m, std::size_t col0,
                      std::size_t cols, double scale, int max_blocks, cudaStream_t stream);

// detail::WideStepAt (wide_step.h) for i < len. y_prev must not overlap obs unless it is the
// same pointer with float rows (elementwise); the back end stages a y_prev that a float64 obs
// overlaps (the engine's in-place widening) through scratch memory first.
void LaunchWideStep(bool state64, const void* e_now, const float* y_prev, const void* e_back,
                    const void* feedback_in, float* x, void* obs, void* feedback_out,
                    std::size_t len, int max_blocks, cudaStream_t stream);

}  // namespace cerar::cuda
