#pragma once
// Up-front cost of building and analysing a design, so that a request that cannot fit is refused
// before it starts and one that takes long says so (the cerar CLI and the Python package's
// make_design). The model and its calibration are in docs/hardening.md ("Cost estimates"); it
// is a guide within a factor of about two on the 2-core machine it was measured on, not a
// promise.

namespace cerar::design {

struct Cost {
  double seconds = 0;
  double bytes = 0;
};

// One analysis of a design of N ranks and c components: float64 or 50-digit (mp50) arithmetic.
Cost AnalysisCost(int N, int c, bool mp50);

// TuneEps's search costs about this many float64 analyses on top of the final one.
inline constexpr double kTuneAnalyses = 30;

// The optimiser's finish (decoders, exact and stored figures in mp50 for a per-rank design)
// costs about this many analyses: 5 s after a 5 s search at N = 8, c = 24 (docs/hardening.md).
inline constexpr double kOptimizerFinishAnalyses = 25;

// Memory to hold the design's matrices as a design file's JSON while it is written.
double FileWriteBytes(int N, int c);

}  // namespace cerar::design
