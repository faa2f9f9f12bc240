#include "options.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <set>

#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "sizes.h"

namespace cerar::bench {
namespace {

std::vector<int> ParseInts(const std::string& list, const char* option) {
  std::vector<int> out;
  for (const std::string& item : SplitList(list)) {
    std::size_t pos = 0;
    int v = 0;
    try {
      v = std::stoi(item, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != item.size() || item.empty() || v < 1)
      throw InvalidArgument(std::string(option) + " '" + Printable(item) +
                            "': expected a whole number >= 1");
    out.push_back(v);
  }
  return out;
}

std::vector<Accumulation> ParseAccumulations(const std::string& list) {
  std::vector<Accumulation> out;
  for (const std::string& item : SplitList(list)) {
    try {
      out.push_back(ParseAccumulation(item));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--accumulation: ") + e.what());
    }
  }
  return out;
}

std::vector<std::string> ParseAlgorithms(const std::string& list) {
  static const std::set<std::string> kKnown{"cerar", "ring", "mpi_allreduce",
                                            "mpi_allreduce_ring"};
  std::vector<std::string> out;
  for (const std::string& a : SplitList(list)) {
    if (!kKnown.count(a))
      throw InvalidArgument("--algorithms: '" + Printable(a) + "' is not cerar, ring, "
                            "mpi_allreduce or mpi_allreduce_ring");
    if (std::find(out.begin(), out.end(), a) != out.end())
      throw InvalidArgument("--algorithms: '" + a + "' is given twice");
    out.push_back(a);
  }
  return out;
}

std::string Number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

void AddOptions(CLI::App& app, Options& o) {
  app.add_option("--design", o.designs, "design file (repeat for several; same N)")->required();
  app.add_option("--sizes", o.sizes, "bytes per rank, comma-separated")->capture_default_str();
  app.add_option("--csv", o.csv, "write the results as CSV");
  app.add_option("--dtype", o.dtype, "f32 | f64")->capture_default_str();
  app.add_option("--reps", o.reps, "timed runs per size (median)")->capture_default_str();
  app.add_option("--segment", o.segment, "largest pipelining segment, bytes (a list: one CERAR "
                 "row each)")->capture_default_str();
  app.add_option("--slots", o.slots, "send slots (in-flight segments; a list: one CERAR row "
                 "each)")->capture_default_str();
  app.add_option("--accumulation", o.accumulation, "CERAR's arithmetic on f32 buffers: buffer, "
                 "f64, f64+feedback, f64-state (a list: one CERAR row each)")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout, "seconds to wait for a peer or a collective")
      ->capture_default_str();
  app.add_option("--algorithms", o.algorithms, "comma-separated")->capture_default_str();
  app.add_option("--netdev", o.netdev, "count this interface's transmitted frames per run");
  app.add_option("--rate-mbit", o.rate_mbit, "the link's rate, for the link fraction");
}

std::string Stem(const std::string& path) {
  std::string s = path.substr(path.find_last_of('/') + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0) s.resize(s.size() - 5);
  return s;
}

Plan MakePlan(const Options& o) {
  if (o.reps < 1) throw InvalidArgument("--reps " + std::to_string(o.reps) + " must be >= 1");
  if (!(std::isfinite(o.rate_mbit) && o.rate_mbit >= 0))
    throw InvalidArgument("--rate-mbit " + Number(o.rate_mbit) +
                          ": expected a finite rate in Mbit/s (0: not given)");
  std::set<std::string> stems;
  for (const std::string& d : o.designs)
    if (!stems.insert(Stem(d)).second)
      throw InvalidArgument("--design " + Printable(d) + ": another design has the row name '" +
                            Printable(Stem(d)) + "'; give each design its own file name");
  Plan p;
  p.options.dtype = ParseDType(o.dtype);
  if (p.options.dtype != DType::kFloat32 && p.options.dtype != DType::kFloat64)
    throw InvalidArgument("--dtype " + Printable(o.dtype) + ": cerar-bench runs f32 or f64");
  p.segments = ParseSizes(o.segment, "--segment");
  p.slots = ParseInts(o.slots, "--slots");
  p.accumulations = ParseAccumulations(o.accumulation);
  p.options.segment_bytes = p.segments.front();
  p.options.send_slots = p.slots.front();
  const std::size_t element = SizeOf(p.options.dtype);
  RequireWholeElements(p.segments, element, o.dtype, "--segment");
  p.sizes = ParseSizes(o.sizes, "--sizes");
  RequireWholeElements(p.sizes, element, o.dtype, "--sizes");
  p.algorithms = ParseAlgorithms(o.algorithms);
  for (const std::string& a : p.algorithms) {
    if (a.rfind("mpi_allreduce", 0) != 0) continue;
    for (std::size_t b : p.sizes)
      if (b / element > std::size_t(INT_MAX))
        throw InvalidArgument("--sizes " + FormatSize(b) + ": " + std::to_string(b / element) +
                              " elements, beyond " + a + "'s int count (INT_MAX); leave the "
                              "mpi_allreduce algorithms out of --algorithms for this size");
  }
  return p;
}

}  // namespace cerar::bench
