#pragma once
// The CLI's use of the toolkit's cost model (cerar/design/cost.h): refuse what cannot fit, and
// say so when a command will take long.
#include <string>

#include "cerar/design/cost.h"

namespace cerar::cli {

using design::AnalysisCost;
using design::Cost;
using design::FileWriteBytes;
using design::kOptimizerFinishAnalyses;
using design::kTuneAnalyses;

// Refuses (InvalidArgument "<what> ... needs about X GB ..., more than the Y GB this process can
// use") when the memory does not fit; prints one note on stderr when it takes over a minute.
void CheckCost(const std::string& what, const Cost& cost);

}  // namespace cerar::cli
