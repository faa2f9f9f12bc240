#pragma once
// A design's derivation in a requested precision (private; make.cc): float64 (refused where it
// cannot be trusted), auto, or the certified precision ladder. Validate (compare.cc) reuses it to
// re-derive a file's exact figures.
#include <string>
#include <vector>

#include "engine.h"

namespace cerar::design::detail {

struct Outcome {
  Derivation derivation;
  std::string certified_against;  // the ladder's lower precision; "" when not certified
};

// Arguments already checked (MakeConstruction, MakeFromEncoders).
Outcome DeriveConstructionIn(const ConstructionOptions& options);
Outcome DeriveFromEncodersIn(int N, int c, const std::vector<MatrixXd>& encoders,
                             Precision precision, int max_digits, const std::string& what);

// "eps construction N = 4, c = 11, eps = 0.01" (messages, Design::Create's source).
std::string ConstructionName(const ConstructionOptions& options);

}  // namespace cerar::design::detail
