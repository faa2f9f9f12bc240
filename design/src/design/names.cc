// Names of the toolkit's enumerations (CLI and file spellings) and unit roundoffs.
#include <algorithm>
#include <cmath>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "engine.h"
#include "ladder.h"

namespace cerar::design {

// "mp" and "mp<digits>" (the names figures carry: "mp50", "mp200") all request the ladder; its
// top is max_digits, not the name's digits. A name's digits must be ones the ladder can hold
// (kMp50Digits ... kMaxDigits): "mp0" or "mp7" asks for less than float64, and is refused rather
// than read as the ladder.
Precision ParsePrecision(const std::string& name) {
  if (name == "float64") return Precision::kFloat64;
  if (name == "auto") return Precision::kAuto;
  if (name == "mp") return Precision::kMp50;
  if (name.rfind("mp", 0) == 0 && name.size() <= 8 &&
      std::all_of(name.begin() + 2, name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    const int digits = std::stoi(name.substr(2));
    if (digits >= detail::kMp50Digits && digits <= detail::kMaxDigits) return Precision::kMp50;
    throw InvalidArgument("precision '" + name + "' has " + std::to_string(digits) +
                          " digits, expected mp<digits> with digits in " +
                          std::to_string(detail::kMp50Digits) + " ... " +
                          std::to_string(detail::kMaxDigits));
  }
  throw InvalidArgument("precision '" + Printable(name, 40) + "' is not one of float64, mp, auto");
}

std::string ToString(Precision p) {
  switch (p) {
    case Precision::kFloat64: return "float64";
    case Precision::kMp50: return "mp50";
    case Precision::kAuto: return "auto";
  }
  throw InvalidArgument("Precision value " + std::to_string(static_cast<int>(p)) + " is unknown");
}

Arithmetic ParseArithmetic(const std::string& name) {
  if (name == "float32") return Arithmetic::kFloat32;
  if (name == "float64") return Arithmetic::kFloat64;
  if (name == "bfloat16") return Arithmetic::kBFloat16;
  if (name == "float32+acc64") return Arithmetic::kFloat32Acc64;
  if (name == "float32+acc64+feedback") return Arithmetic::kFloat32Acc64Feedback;
  if (name == "float32+state64") return Arithmetic::kFloat32State64;
  throw InvalidArgument("arithmetic '" + Printable(name, 40) +
                        "' is not one of float32, float64, bfloat16, float32+acc64, "
                        "float32+acc64+feedback, float32+state64");
}

std::string ToString(Arithmetic a) {
  switch (a) {
    case Arithmetic::kFloat32: return "float32";
    case Arithmetic::kFloat64: return "float64";
    case Arithmetic::kBFloat16: return "bfloat16";
    case Arithmetic::kFloat32Acc64: return "float32+acc64";
    case Arithmetic::kFloat32Acc64Feedback: return "float32+acc64+feedback";
    case Arithmetic::kFloat32State64: return "float32+state64";
  }
  throw InvalidArgument("Arithmetic value " + std::to_string(static_cast<int>(a)) + " is unknown");
}

double UnitRoundoff(Arithmetic a) {
  switch (a) {
    case Arithmetic::kFloat32: return std::ldexp(1.0, -24);
    case Arithmetic::kFloat64: return std::ldexp(1.0, -53);
    case Arithmetic::kBFloat16: return std::ldexp(1.0, -8);
    case Arithmetic::kFloat32Acc64:  // what is stored is float32
    case Arithmetic::kFloat32Acc64Feedback:
    case Arithmetic::kFloat32State64: return std::ldexp(1.0, -24);
  }
  throw InvalidArgument("Arithmetic value " + std::to_string(static_cast<int>(a)) + " is unknown");
}

Construction ParseConstruction(const std::string& name) {
  if (name == "eps") return Construction::kEps;
  if (name == "vandermonde") return Construction::kVandermonde;
  throw InvalidArgument("construction '" + Printable(name, 40) + "' is not one of eps, vandermonde");
}

std::string ToString(Construction c) {
  switch (c) {
    case Construction::kEps: return "eps";
    case Construction::kVandermonde: return "vandermonde";
  }
  throw InvalidArgument("Construction value " + std::to_string(static_cast<int>(c)) +
                        " is unknown");
}

}  // namespace cerar::design
