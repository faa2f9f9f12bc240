#pragma once
// Up-front cost of the long computations (building and analysing a design), so that a request
// that cannot fit is refused before it starts and one that takes long says so. The model and
// its calibration are in docs/hardening.md ("Cost estimates"); it is a guide within a factor of
// about two on the 2-core machine it was measured on, not a promise.
#include <string>

namespace cerar::cli {

struct Cost {
  double seconds = 0;
  double bytes = 0;
};

// One analysis of a design of N ranks and c components: float64 or 50-digit (mp50) arithmetic.
Cost AnalysisCost(int N, int c, bool mp50);

// The optimiser's finish (decoders, exact and stored figures in mp50 for a per-rank design)
// costs about this many analyses: 5 s after a 5 s search at N = 8, c = 24 (docs/hardening.md).
inline constexpr double kOptimizerFinishAnalyses = 25;

// Memory to hold the design's matrices as a design file's JSON while it is written.
double FileWriteBytes(int N, int c);

// Refuses (InvalidArgument "<what> ... needs about X GB ..., more than the Y GB this process can
// use") when the memory does not fit; prints one note on stderr when it takes over a minute.
void CheckCost(const std::string& what, const Cost& cost);

}  // namespace cerar::cli
