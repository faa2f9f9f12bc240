#include "cost.h"

#include <cstdio>
#include <iostream>

#include "cerar/errors.h"
#include "cerar/runtime/simulate.h"

namespace cerar::cli {
namespace {

std::string Duration(double seconds) {
  char text[48];
  if (seconds < 120) std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 7200) std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}

std::string Gigabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GB", bytes / 1e9);
  return text;
}

}  // namespace

void CheckCost(const std::string& what, const Cost& cost) {
  const double available = double(AvailableMemoryBytes());
  if (cost.bytes > available) {
    throw InvalidArgument(what + " needs about " + Gigabytes(cost.bytes) +
                          " of memory (estimate, docs/hardening.md), more than the " +
                          Gigabytes(available) + " this process can use");
  }
  if (cost.seconds > 60) {
    std::cerr << "cerar: note: " << what << " is estimated to take about "
              << Duration(cost.seconds) << " and " << Gigabytes(cost.bytes)
              << " (docs/hardening.md); --timeout SECONDS stops it\n";
  }
}

}  // namespace cerar::cli
