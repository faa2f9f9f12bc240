// Recorded vs re-derived figures (see toolkit.h for the rule).
#include <algorithm>
#include <cmath>

#include "cerar/design/toolkit.h"

namespace cerar::design {
namespace {

bool Agree(double recorded, double derived, double abs_floor) {
  if (std::isinf(recorded) || std::isinf(derived)) return recorded == derived;
  if (!std::isfinite(recorded) || !std::isfinite(derived)) return false;
  const double scale = std::max(std::abs(recorded), std::abs(derived));
  return std::abs(recorded - derived) <= 1e-6 * scale + abs_floor;
}

}  // namespace

std::vector<FigureCheck> CompareFigures(const Figures& recorded, const Figures& derived) {
  struct Row {
    const char* name;
    double Figures::*field;
    double floor;
  };
  static constexpr Row kRows[] = {{"err_op", &Figures::err_op, 1e-12},
                                  {"err_rms", &Figures::err_rms, 1e-12},
                                  {"kappa_dec", &Figures::kappa_dec, 0},
                                  {"kappa_enc", &Figures::kappa_enc, 0}};
  std::vector<FigureCheck> out;
  for (const Row& r : kRows) {
    const double a = recorded.*r.field, b = derived.*r.field;
    out.push_back({r.name, a, b, Agree(a, b, r.floor)});
  }
  return out;
}

}  // namespace cerar::design
