// DType helpers declared in cerar/runtime/transport.h.
#include <string>

#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/transport.h"

namespace cerar {

std::size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kBFloat16: return 2;
    case DType::kFloat16: return 2;
  }
  throw InvalidArgument("dtype: unknown value " + std::to_string(static_cast<int>(dtype)));
}

std::string ToString(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "f16";
  }
  throw InvalidArgument("dtype: unknown value " + std::to_string(static_cast<int>(dtype)));
}

DType ParseDType(const std::string& name) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16})
    if (ToString(t) == name) return t;
  throw InvalidArgument("dtype '" + Printable(name, 40) + "': expected f32, f64, bf16 or f16");
}

std::string ToString(Accumulation accumulation) {
  switch (accumulation) {
    case Accumulation::kBuffer: return "buffer";
    case Accumulation::kFloat64: return "f64";
    case Accumulation::kFloat64Feedback: return "f64+feedback";
    case Accumulation::kFloat64State: return "f64-state";
  }
  throw InvalidArgument("accumulation: unknown value " +
                        std::to_string(static_cast<int>(accumulation)));
}

Accumulation ParseAccumulation(const std::string& name) {
  for (Accumulation a :
       {Accumulation::kBuffer, Accumulation::kFloat64, Accumulation::kFloat64Feedback,
        Accumulation::kFloat64State})
    if (ToString(a) == name) return a;
  throw InvalidArgument("accumulation '" + Printable(name, 40) +
                        "': expected buffer, f64, f64+feedback or f64-state");
}

std::string ModelArithmetic(DType dtype, Accumulation accumulation) {
  switch (dtype) {
    case DType::kFloat64: return "float64";  // computes in float64 whatever the accumulation
    case DType::kFloat32:
      switch (accumulation) {
        case Accumulation::kBuffer: return "float32";
        case Accumulation::kFloat64: return "float32+acc64";
        case Accumulation::kFloat64Feedback: return "float32+acc64+feedback";
        case Accumulation::kFloat64State: return "float32+state64";
      }
      break;
    case DType::kBFloat16:
      if (accumulation == Accumulation::kBuffer) return "bfloat16";
      throw InvalidArgument("arithmetic: bf16 buffers with accumulation " +
                            ToString(accumulation) + " have no error model, only with buffer");
    case DType::kFloat16:
      throw InvalidArgument("arithmetic: f16 buffers have no error model (docs/error-model.md "
                            "models float64, float32 and its wide variants, bfloat16)");
  }
  throw InvalidArgument("arithmetic: unknown accumulation " +
                        std::to_string(static_cast<int>(accumulation)));
}

void ComputeBackend::SetAccumulation(Accumulation accumulation) {
  if (accumulation != Accumulation::kBuffer)
    throw InvalidArgument("compute back end: accumulation " + ToString(accumulation) +
                          " is not supported, use buffer");
}

void ComputeBackend::StepWithFeedback(DType dtype, const void*, const void*, const void*,
                                      const void*, void*, void*, void*, std::size_t) {
  throw InvalidArgument("compute back end: rounding feedback is not supported for " +
                        ToString(dtype) + " buffers with this accumulation");
}

}  // namespace cerar
