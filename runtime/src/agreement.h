#pragma once
// Shared pre-run checks of the all-reduce objects (private).
#include <cstdint>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"

namespace cerar::detail {

// The largest segment in elements; throws when segment_bytes is below one element.
inline std::size_t MaxSegmentColumns(const AllReduceOptions& o, std::size_t elem) {
  if (o.segment_bytes < elem)
    throw InvalidArgument("all-reduce: segment size " + std::to_string(o.segment_bytes) +
                          " bytes is smaller than one element (" + std::to_string(elem) + ")");
  return o.segment_bytes / elem;
}

// The back end must compute in `dtype` (with `accumulation`) and share the transport's memory
// space; local checks, before any collective.
inline void CheckBackend(const ComputeBackend& backend, const Transport& transport, DType dtype,
                         const char* who, Accumulation accumulation = Accumulation::kBuffer) {
  if (!backend.Supports(dtype))
    throw InvalidArgument(std::string(who) + ": dtype " + ToString(dtype) +
                          " is not supported by the compute back end");
  if (!backend.SupportsAccumulation(dtype, accumulation))
    throw InvalidArgument(std::string(who) + ": accumulation " + ToString(accumulation) +
                          " on dtype " + ToString(dtype) +
                          " is not supported by the compute back end");
  if (transport.memory_space() != backend.memory_space())
    throw InvalidArgument(std::string(who) + ": transport and back end use different memory "
                          "spaces");
}

// Collective: ranks must agree on count, dtype, op, segment size and send slots (message sizes
// depend on all of them), or every rank throws.
inline void CheckRunAgreement(Transport& t, std::size_t count, const AllReduceOptions& o) {
  t.CheckAgreement("element count", count);
  t.CheckAgreement("dtype", static_cast<std::uint64_t>(o.dtype));
  t.CheckAgreement("reduce op", static_cast<std::uint64_t>(o.op));
  t.CheckAgreement("segment bytes", o.segment_bytes);
  t.CheckAgreement("send slots", static_cast<std::uint64_t>(o.send_slots));
}

}  // namespace cerar::detail
