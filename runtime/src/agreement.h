#pragma once
// Shared pre-run checks of the all-reduce objects (private).
#include <cstdint>
#include <string>

#include "cerar/format/errors.h"
#include "cerar/runtime/allreduce.h"

namespace cerar::detail {

inline std::size_t SegmentColumns(const AllReduceOptions& o, std::size_t elem) {
  if (o.segment_bytes < elem)
    throw InvalidArgument("all-reduce: segment size " + std::to_string(o.segment_bytes) +
                          " bytes is smaller than one element (" + std::to_string(elem) + ")");
  return o.segment_bytes / elem;
}

inline void CheckDType(DType dtype, const char* who) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64)
    throw InvalidArgument(std::string(who) + ": dtype " + ToString(dtype) +
                          " not supported, use f32 or f64");
}

// Collective: ranks must agree on count, dtype, op and segment size (message sizes depend on
// all of them), or every rank throws.
inline void CheckRunAgreement(Transport& t, std::size_t count, const AllReduceOptions& o) {
  t.CheckAgreement("element count", count);
  t.CheckAgreement("dtype", static_cast<std::uint64_t>(o.dtype));
  t.CheckAgreement("reduce op", static_cast<std::uint64_t>(o.op));
  t.CheckAgreement("segment bytes", o.segment_bytes);
}

}  // namespace cerar::detail
