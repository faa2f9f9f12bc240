#include "memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cerar/runtime/backend.h"
#include "schedule.h"
#include "sizes.h"

namespace cerar::bench {
namespace {

std::string GiB(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", bytes / double(1ull << 30));
  return b;
}

}  // namespace

MemoryNeed RankMemoryNeed(const Plan& plan, const std::vector<int>& cs,
                          const std::vector<std::string>& names, int N, std::size_t size_bytes) {
  const double es = double(SizeOf(plan.options.dtype));
  const double n = std::floor(double(size_bytes) / es);
  MemoryNeed need;
  double largest = -1;
  auto consider = [&](double bytes, const std::string& what) {
    if (bytes > largest) largest = bytes, need.what = what;
  };
  for (const std::string& a : plan.algorithms) {
    if (a == "cerar") {
      // The engine's workspace (runtime/src/schedule.h): L + 2 = c + N rows of m = ceil(n / c)
      // elements, N feedback rows where the packets' rounding is fed back (counted for every
      // feedback or float64-state run: an upper bound), rows of float64 for float64 state, and
      // min(slots, segments) send slots of one segment each.
      for (std::size_t d = 0; d < cs.size(); ++d) {
        const double c = cs[d], m = std::ceil(n / c);
        for (const std::size_t seg : plan.segments)
          for (const int slots : plan.slots)
            for (const Accumulation acc : plan.accumulations) {
              const bool state64 = acc == Accumulation::kFloat64State;
              const bool feedback = state64 || acc == Accumulation::kFloat64Feedback;
              const double rows = c + N + (feedback ? N : 0);
              const double row_bytes = state64 ? 8.0 : es;
              const double cols = std::min(
                  m, double(SegmentColumns(std::size_t(m), std::size_t(es), seg, slots)));
              // + 1: the cut where the number of data components drops (PlanSegments)
              const double used = std::min(double(slots), std::ceil(m / cols) + 1);
              consider(rows * m * row_bytes + used * cols * es,
                       "cerar:" + names[d] + (acc == Accumulation::kBuffer
                                                          ? std::string()
                                                          : "/" + ToString(acc)));
            }
      }
    } else if (a == "ring") {
      consider((std::max(std::floor(n / N), 1.0) + N) * es, "ring");  // ring_allreduce.cc
    } else {
      consider(double(size_bytes), a);  // Open MPI's reduction may stage a copy of the buffer
    }
  }
  need.bytes = double(size_bytes) + std::max(largest, 0.0);
  return need;
}

double AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    double value = 0;
    if (fields >> key >> value >> unit && key == "MemAvailable:" && unit == "kB")
      return value * 1024;
  }
  return -1;
}

std::string MemoryRefusal(const MemoryNeed& need, std::size_t size_bytes, int ranks_on_node,
                          double available) {
  const double total = need.bytes * ranks_on_node;
  if (available < 0 || total <= available) return "";
  return "--sizes up to " + FormatSize(size_bytes) + " need about " +
         GiB(need.bytes) + " per rank (its buffer and " + need.what + "'s workspace), " +
         std::to_string(ranks_on_node) + " rank" + (ranks_on_node == 1 ? "" : "s") +
         " on this node: " + GiB(total) + ", above its MemAvailable of " + GiB(available) +
         " (/proc/meminfo); give smaller --sizes or fewer ranks per node";
}

}  // namespace cerar::bench
