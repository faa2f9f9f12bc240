#pragma once
// Which arithmetic an accumulation (backend.h) means for a buffer dtype, shared by the CPU and
// CUDA back ends so that both lay out and compute the same run. The wide paths exist for float32
// buffers only: float64 buffers compute in float64 already.
#include "cerar/runtime/backend.h"

namespace cerar::detail {

// Float64 arithmetic, each stored result rounded once (kFloat64 and the two built on it).
inline bool WideArithmetic(DType dtype, Accumulation accumulation) {
  return dtype == DType::kFloat32 && accumulation != Accumulation::kBuffer;
}

// The packets' rounding is fed back (ComputeBackend::FeedsBackRounding).
inline bool RoundingFedBack(DType dtype, Accumulation accumulation) {
  return dtype == DType::kFloat32 && (accumulation == Accumulation::kFloat64Feedback ||
                                      accumulation == Accumulation::kFloat64State);
}

// The workspace rows are float64 (ComputeBackend::StateElementBytes = 8).
inline bool Float64Rows(DType dtype, Accumulation accumulation) {
  return dtype == DType::kFloat32 && accumulation == Accumulation::kFloat64State;
}

}  // namespace cerar::detail
