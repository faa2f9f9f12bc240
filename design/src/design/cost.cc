#include "cerar/design/cost.h"

namespace cerar::design {
namespace {

// docs/hardening.md, "Cost estimates": per rank, N - 1 window products and an eigenvalue
// problem or two of size c (the c^3 term; seconds per operation in each arithmetic), plus a
// term growing as N^3 c that dominates for small c (N = 600, c = 1: 5.7 s in either).
constexpr double kSecondsPerOpMp50 = 8e-8;
constexpr double kSecondsPerOpFloat64 = 5e-10;
constexpr double kSecondsPerN3c = 2.5e-8;
// Resident bytes per matrix entry while building and analysing, and while writing the file.
constexpr double kBytesPerEntryMp50 = 150;
constexpr double kBytesPerEntryFloat64 = 40;
constexpr double kBytesPerEntryFile = 100;
constexpr double kBaseBytes = 20e6;

double Entries(int N, int c) {
  const double L = double(c) + N - 2;
  return double(N) * (L + c) * c;  // all E_i (L x c) and D_i (c x c)
}

}  // namespace

Cost AnalysisCost(int N, int c, bool mp50) {
  const double n = N, k = c;
  Cost cost;
  cost.seconds = (mp50 ? kSecondsPerOpMp50 : kSecondsPerOpFloat64) * n * (2 * n + 8) * k * k * k +
                 kSecondsPerN3c * n * n * n * k;
  cost.bytes = kBaseBytes + Entries(N, c) * (mp50 ? kBytesPerEntryMp50 : kBytesPerEntryFloat64);
  return cost;
}

double FileWriteBytes(int N, int c) { return Entries(N, c) * kBytesPerEntryFile; }

}  // namespace cerar::design
