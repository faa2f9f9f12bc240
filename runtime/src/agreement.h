#pragma once
// Shared pre-run checks of the all-reduce objects (private).
#include <cstdint>
#include <sstream>
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

// Enum values only a cast can make (static_cast<ReduceOp>(7) used to run as a sum): refused by
// name, locally, before any collective.
inline void CheckEnumValues(const AllReduceOptions& o, const char* who) {
  if (o.op != ReduceOp::kSum && o.op != ReduceOp::kAverage)
    throw InvalidArgument(std::string(who) + ": op = " + std::to_string(static_cast<int>(o.op)) +
                          ", expected ReduceOp::kSum (0) or ReduceOp::kAverage (1)");
  switch (o.accumulation) {
    case Accumulation::kBuffer:
    case Accumulation::kFloat64:
    case Accumulation::kFloat64Feedback:
    case Accumulation::kFloat64State:
      return;
  }
  throw InvalidArgument(std::string(who) + ": accumulation = " +
                        std::to_string(static_cast<int>(o.accumulation)) +
                        ", expected buffer, f64, f64+feedback or f64-state (0 ... 3)");
}

inline std::string StreamName(const void* stream) {
  if (stream == nullptr) return "stream 0 (the legacy stream)";
  std::ostringstream s;
  s << "stream " << stream;
  return s.str();
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
  // Stream-ordered: only one stream orders the kernels against the exchanges (a send reading a
  // slot before the step has written it returned garbage, without an error).
  if (backend.memory_space() == MemorySpace::kDevice &&
      backend.device_stream() != transport.device_stream())
    throw InvalidArgument(std::string(who) + ": the back end enqueues on " +
                          StreamName(backend.device_stream()) + " and the transport on " +
                          StreamName(transport.device_stream()) +
                          "; a device back end and a device transport must enqueue on the same "
                          "stream (pass one cudaStream_t to CreateCudaBackend and "
                          "CreateNcclTransport)");
}

// The algorithms, as the first agreement check numbers them: ranks building different ones must
// fail on this check, named, not on whichever check each sequence reaches first.
enum class Algorithm : std::uint64_t { kExactRing = 0, kCoded = 1 };

// Collective: ranks must agree on the algorithm, count, dtype, op, segment size and send slots
// (message sizes depend on all of them), or every rank throws. Enum values are named in `what`,
// since the message shows the numbers.
static_assert(int(DType::kFloat32) == 0 && int(DType::kFloat64) == 1 &&
                  int(DType::kBFloat16) == 2 && int(DType::kFloat16) == 3 &&
                  int(ReduceOp::kSum) == 0 && int(ReduceOp::kAverage) == 1,
              "CheckRunAgreement's messages name these values");
inline void CheckRunAgreement(Transport& t, Algorithm algorithm, std::size_t count,
                              const AllReduceOptions& o) {
  t.CheckAgreement("all-reduce algorithm (0 = exact ring, 1 = coded)",
                   static_cast<std::uint64_t>(algorithm));
  t.CheckAgreement("element count", count);
  t.CheckAgreement("dtype (0 = f32, 1 = f64, 2 = bf16, 3 = f16)",
                   static_cast<std::uint64_t>(o.dtype));
  t.CheckAgreement("reduce op (0 = sum, 1 = average)", static_cast<std::uint64_t>(o.op));
  t.CheckAgreement("segment bytes", o.segment_bytes);
  t.CheckAgreement("send slots", static_cast<std::uint64_t>(o.send_slots));
}

}  // namespace cerar::detail
