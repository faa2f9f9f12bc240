#pragma once
// cerar-bench's command line (Options, as CLI11 fills it) and what the runs need from it (Plan).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cerar/runtime/allreduce.h"

namespace cerar::bench {

struct Options {
  std::vector<std::string> designs;
  std::string sizes = "4KiB,64KiB,1MiB,16MiB,256MiB", csv, dtype = "f32", netdev;
  std::string algorithms = "cerar,ring,mpi_allreduce,mpi_allreduce_ring";
  int reps = 5;
  // Lists: CERAR runs once per (design, segment, slots, accumulation); the ring uses the first
  // segment and slots, and buffer arithmetic.
  std::string segment = std::to_string(AllReduceOptions{}.segment_bytes);
  std::string slots = std::to_string(AllReduceOptions{}.send_slots);
  std::string accumulation = "buffer";  // CERAR's arithmetic (the exact ring: buffer only)
  double timeout = 60, rate_mbit = 0;
};

void AddOptions(CLI::App& app, Options& o);

// The options, parsed and checked. Made from the (agreed) arguments alone, so every rank makes the
// same Plan or throws the same InvalidArgument: a refusal here needs no MPI_Abort.
struct Plan {
  AllReduceOptions options;  // dtype, and the first segment and slots (the ring's)
  std::vector<std::size_t> sizes, segments;
  std::vector<int> slots;
  std::vector<Accumulation> accumulations;
  std::vector<std::string> algorithms;  // in the order given: cerar, ring, mpi_allreduce...
};

Plan MakePlan(const Options& o);

// A design's row name: its file name without the folder and ".json".
std::string Stem(const std::string& path);

}  // namespace cerar::bench
