#pragma once
// First-order finite-precision error model of a run (docs/error-model.md), private part.
#include <map>
#include <string>
#include <vector>

#include "cerar/design/toolkit.h"
#include "cerar/format/design.h"

namespace cerar::design::detail {

// Expected relative error max_j ||S_hat_j - S|| / ||S|| of a run of the protocol in
// `arithmetic` with the given float64 matrices, for i.i.d. zero-mean inputs:
// sqrt(err_rms_j^2 + rounding_j^2), rounding from encode, ring, observation and decode.
double ModelError(int N, int c, const std::vector<MatrixXd>& encoders,
                  const std::vector<MatrixXd>& decoders,
                  const std::vector<double>& err_rms_per_rank, Arithmetic arithmetic);

// ModelError for float32, float64, bfloat16, float32+acc64 and float32+acc64+feedback, keyed by
// ToString(Arithmetic).
std::map<std::string, double> ModelErrors(int N, int c, const std::vector<MatrixXd>& encoders,
                                          const std::vector<MatrixXd>& decoders,
                                          const std::vector<double>& err_rms_per_rank);

// The model's rounding variance per operation, in units of u^2 (0.18: docs/error-model.md), for
// code that evaluates the same model in another form (the optimiser's objective).
double RoundingVarianceFactor();

}  // namespace cerar::design::detail
