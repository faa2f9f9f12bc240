#pragma once
// cerar-bench's memory check, before any run. Linux overcommits, so a size too large for the
// node is no bad_alloc: the OOM killer ends one rank mid-run, and the others wait for it until
// --timeout. The estimate is each rank's buffer plus the largest workspace any algorithm of the
// plan allocates at the largest size, times the ranks that share the node, against the node's
// MemAvailable (/proc/meminfo).
#include <cstddef>
#include <string>
#include <vector>

#include "options.h"

namespace cerar::bench {

struct MemoryNeed {
  double bytes = 0;   // one rank's: its buffer and the largest workspace
  std::string what;   // the algorithm (and design) of that workspace
};

// One rank's need at `size_bytes` (the largest workspace over the plan's algorithms, designs,
// segments, slots and accumulations), for N ranks and designs of c = cs[d] named names[d]. Pure,
// so it is tested without MPI (tests/bench/memory_test.cc: never below the engine's workspace).
MemoryNeed RankMemoryNeed(const Plan& plan, const std::vector<int>& cs,
                          const std::vector<std::string>& names, int N, std::size_t size_bytes);

// MemAvailable of /proc/meminfo in bytes; a negative value where it cannot be read.
double AvailableMemoryBytes();

// "" when `ranks_on_node` ranks of `need` fit into `available` bytes (or it is unknown: < 0),
// else the one-line refusal naming the figures and what to do.
std::string MemoryRefusal(const MemoryNeed& need, std::size_t size_bytes, int ranks_on_node,
                          double available);

}  // namespace cerar::bench
