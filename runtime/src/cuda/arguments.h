#pragma once
// Argument rules of the CUDA back end, checked on the host before anything is enqueued (so they
// are testable without a device). Each throws InvalidArgument naming the call, value and rule.
#include <cstddef>

#include "cerar/format/design.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/transport.h"

namespace cerar::cuda {

// E is L x c with L >= c >= 1 (L = c + N - 2, N >= 2); D is c x c; all entries finite.
void CheckMatrices(const MatrixXd& encoder, const MatrixXd& decoder);

// Shared rules of Encode/Decode for a column range [col0, col0 + cols) of rows of m elements
// with row stride ld, and kc of c components present (1 <= kc <= c: the engine never asks for a
// range without data). `c` < 1 means SetMatrices was not called.
void CheckSegment(const char* call, DType dtype, std::size_t m, std::size_t col0,
                  std::size_t cols, int kc, int c, std::size_t ld);

// Encode: rows [first, first + count) of E (L rows).
void CheckEncode(DType dtype, const void* g, std::size_t m, std::size_t col0, std::size_t cols,
                 int kc, int c, int first, int count, int L, const void* enc, std::size_t ld);

void CheckDecode(DType dtype, const void* obs, std::size_t ld, const void* g, std::size_t m,
                 std::size_t col0, std::size_t cols, int kc, int c, double scale);

void CheckStep(DType dtype);

// Accumulations the back end computes: kBuffer for every dtype; the wide ones (kFloat64,
// kFloat64Feedback, kFloat64State) for f32 (wide_kernels.cu) and f64 (already float64: the
// plain path, as on the CPU), not for bf16/f16, whose engine runs the plain path only.
bool SupportsAccumulation(DType dtype, Accumulation accumulation);
// Throws InvalidArgument naming the call, the accumulation and the dtype where the above is false.
void CheckAccumulation(const char* call, DType dtype, Accumulation accumulation);

}  // namespace cerar::cuda
