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

}  // namespace cerar::cuda
