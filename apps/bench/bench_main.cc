// cerar-bench: mpiexec -n N cerar-bench --design FILE [--design FILE ...] [options]
// CERAR (one row per design), the exact ring (same MPI transport, same back end) and
// MPI_Allreduce (Open MPI's default algorithm and its ring) on the same inputs, for each size
// (bytes per rank). Options: --sizes 4KiB,...  --reps R  --dtype f32|f64  --segment BYTES
// --slots K  --accumulation buffer,f64-state  --timeout S
// --algorithms cerar,ring,mpi_allreduce,mpi_allreduce_ring  --csv FILE  --netdev IF (per-rank
// frame counters of that interface)  --rate-mbit R (the link's rate, for the link fraction).
// --segment, --slots and --accumulation take lists: one CERAR row per design and combination.
//
// Each size: one warm-up run of every algorithm, then R rounds; round r runs every algorithm
// once, in an order rotated by r, so all algorithms see the same machine load and their ratios
// are side by side. Per algorithm: median wall time (a run's time is the slowest rank's), bytes
// per rank counted by the transport and by the model, frames on --netdev, CPU seconds per rank,
// and the relative error ||out_j - S|| / ||S|| (max over ranks) of the last timed run against the
// exact sum S, which every rank recomputes from the reproducible inputs (inputs.h) instead of
// sending. Every timed run's output is checked on every rank: a NaN or infinity, or (CERAR and
// the ring) a run whose bytes differ from the first timed run's, ends the job with one line.
//
// Nothing hangs: the ranks first agree on every argument, and every collective of the bench is
// under the --timeout deadline (collectives.h). A table on rank 0's stdout; the CSV is written
// atomically.
#include <mpi.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/mpi_transport.h"
#include "collectives.h"
#include "cli_checks.h"
#include "inputs.h"
#include "memory.h"
#include "net_counters.h"
#include "options.h"
#include "sizes.h"

namespace cerar::bench {
namespace {

// One algorithm of the comparison; `design` for CERAR only.
struct Algorithm {
  std::string name;
  std::string design_name;
  const Design* design = nullptr;
  AllReduceOptions options;
};

// What one rank measured over the timed runs of one algorithm at one size.
struct Samples {
  std::vector<double> times, cpu;  // per run: slowest rank's wall time; this rank's CPU time
  std::vector<double> wait, compute, progress;  // per run: this rank's RunTimes (cerar, ring)
  double wire_bytes = 0, wire_payload = 0, retrans = 0;  // summed over timed runs, this rank
  std::uint64_t bytes_sent = 0;       // transport count of the last run (0: not observable)
  std::optional<std::uint64_t> expected;  // traffic model, when there is one
  std::vector<std::uint64_t> digests;     // per run: this rank's CheckOutput digest
  double rel_error = 0;
};

struct Row {
  std::string algorithm, design, accumulation = "buffer";
  int N = 0, c = 0, reps = 0;
  double rate_mbit = 0;
  std::size_t size_bytes = 0;
  double median_s = 0, min_s = 0, max_s = 0;
  long long bytes_sent = -1, expected = -1;  // -1: not observable / no model
  double wire_bytes = -1, wire_payload = -1, retrans = -1, link_fraction = -1;
  double cpu_s = 0, rel_error = 0, predicted_error = -1, load1 = -1;
  double wait_s = -1, compute_s = -1, progress_s = -1;  // RunTimes, cerar and ring (-1: none)
};

// The median; with an even count, the mean of the two middle values.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

template <typename T>
MPI_Datatype MpiType() {
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

std::uint64_t Fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Every rank must run the same loops with the same sizes, or the collectives below would pair
// up wrongly and hang: compare every option (CLI11's canonical "name=value" lines) first.
void AgreeOnArguments(Collectives& coll, const std::string& config) {
  std::vector<std::string> lines;
  std::istringstream in(config);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<std::uint64_t> mine;
  for (const auto& l : lines) mine.push_back(Fnv1a(l));
  mine.push_back(lines.size());
  const std::vector<std::uint64_t> all = coll.AllGather(mine, "the argument check");
  const std::size_t k = mine.size();
  for (int r = 0; r < coll.size(); ++r)
    for (std::size_t i = 0; i < k; ++i)
      if (all[r * k + i] != mine[i])
        throw InvalidArgument("ranks were given different arguments: rank " +
                              std::to_string(coll.rank()) + " has '" +
                              (i < lines.size() ? lines[i] : std::to_string(lines.size()) +
                                                                 " options") +
                              "', rank " + std::to_string(r) + " something else; every rank "
                              "must get the same options");
}

template <typename T>
class Bench {
 public:
  // `mpi_ring`: the communicator of mpi_allreduce_ring (ForcedAllreduceComm), when it runs.
  Bench(const Options& o, const Plan& plan, const std::vector<Design>& designs, Transport& tr,
        Collectives& coll, MPI_Comm mpi_ring)
      : o_(o), plan_(plan), designs_(designs), tr_(tr), coll_(coll), opt_(plan.options),
        watchdog_(coll.rank(), o.timeout), mpi_ring_(mpi_ring) {}

  std::vector<Row> Size(std::size_t size_bytes) {
    std::vector<T> buf;
    try {
      buf.resize(size_bytes / sizeof(T));  // a whole number of elements (MakePlan)
    } catch (const std::bad_alloc&) {
      throw Error("rank " + std::to_string(tr_.rank()) + ": cannot allocate the " +
                  FormatSize(size_bytes) + " buffer of one rank (" +
                  std::to_string(size_bytes) + " bytes)");
    }
    const std::vector<Algorithm> algos = Algorithms();
    std::vector<Samples> s(algos.size());
    const double load = LoadAverage();
    for (int r = -1; r < o_.reps; ++r) {  // r = -1: warm-up
      for (std::size_t k = 0; k < algos.size(); ++k) {
        const std::size_t a = (k + std::size_t(r + 1)) % algos.size();  // rotated order
        RunOnce(algos[a], buf, r >= 0 ? &s[a] : nullptr, r);
      }
    }
    std::vector<Row> rows;
    for (std::size_t a = 0; a < algos.size(); ++a) rows.push_back(MakeRow(algos[a], s[a], size_bytes, load));
    return rows;
  }

 private:
  std::vector<Algorithm> Algorithms() {
    std::vector<Algorithm> out;
    for (const std::string& a : plan_.algorithms) {
      if (a != "cerar") {
        out.push_back({a, "", nullptr, opt_});
        continue;
      }
      const std::vector<std::size_t>& segs = plan_.segments;
      const std::vector<int>& slots = plan_.slots;
      const std::vector<Accumulation>& accs = plan_.accumulations;
      for (std::size_t d = 0; d < designs_.size(); ++d)
        for (std::size_t seg : segs)
          for (int k : slots)
            for (Accumulation acc : accs) {
              AllReduceOptions ao = opt_;
              ao.segment_bytes = seg;
              ao.send_slots = k;
              ao.accumulation = acc;
              std::string name = Stem(o_.designs[d]);
              if (segs.size() > 1) name += "/seg" + FormatSize(seg);
              if (slots.size() > 1) name += "/K" + std::to_string(k);
              if (accs.size() > 1 || acc != Accumulation::kBuffer) name += "/" + ToString(acc);
              out.push_back({a, name, &designs_[d], ao});
            }
    }
    return out;
  }

  // Run `index` (-1: the warm-up) of `a` on fresh inputs; timed and counted into `s` unless it is
  // the warm-up. Every timed run's output is checked (CheckRun); the last one's error measured.
  void RunOnce(const Algorithm& a, std::vector<T>& buf, Samples* s, int index) {
    const std::size_t count = buf.size();
    const int N = tr_.size();
    FillInput(tr_.rank(), buf);
    // Objects are built per run (outside the timing) so that only one workspace is alive: at
    // 256 MiB per rank and 8 ranks, one per design would not fit this machine.
    std::unique_ptr<ComputeBackend> be;
    std::unique_ptr<CodedAllReduce> coded;
    std::unique_ptr<RingAllReduce> ring;
    std::function<void()> run;
    std::function<RunTimes()> times;
    std::optional<std::uint64_t> expected;
    if (a.name == "cerar") {
      be = CreateCpuBackend();
      coded = std::make_unique<CodedAllReduce>(*a.design, tr_, *be, count, a.options);
      run = [&] { coded->Run(buf.data()); };
      times = [&] { return coded->last_run_times(); };
      expected = coded->expected_bytes_per_run();
    } else if (a.name == "ring") {
      be = CreateCpuBackend();
      ring = std::make_unique<RingAllReduce>(tr_, *be, count, opt_);
      run = [&] { ring->Run(buf.data()); };
      times = [&] { return ring->last_run_times(); };
      expected = ring->expected_bytes_per_run();
    } else {
      MPI_Comm comm = a.name == "mpi_allreduce" ? MPI_COMM_WORLD : mpi_ring_;
      run = [&, comm] {
        if (!count) return;
        watchdog_.Arm(a.name);
        const int rc = MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(count), MpiType<T>(),
                                     MPI_SUM, comm);
        watchdog_.Disarm();
        if (rc != MPI_SUCCESS) throw TransportError("MPI_Allreduce failed: error " + std::to_string(rc));
      };
      // Open MPI's ring (algorithm 4): 2 (N-1) blocks of about count/N elements per rank.
      if (a.name == "mpi_allreduce_ring")
        expected = std::uint64_t(2 * (N - 1)) * ((count + N - 1) / N) * sizeof(T);
    }
    coll_.Barrier("the start of a " + a.name + " run");
    tr_.ResetCounters();
    NetCounters n0, n1;
    if (!o_.netdev.empty()) n0 = ReadNetCounters(o_.netdev);
    const double c0 = CpuSeconds(), t0 = MPI_Wtime();
    run();
    const double dt = MPI_Wtime() - t0, cpu = CpuSeconds() - c0;
    const double slowest = coll_.Max(dt, "the end of a " + a.name + " run");
    if (!o_.netdev.empty()) n1 = ReadNetCounters(o_.netdev);  // every rank has received all
    if (!s) return;
    s->times.push_back(slowest);
    s->cpu.push_back(cpu);
    if (times) {
      const RunTimes rt = times();
      s->wait.push_back(rt.wait_s);
      s->compute.push_back(rt.compute_s);
      s->progress.push_back(rt.progress_s);
    }
    s->expected = expected;
    s->bytes_sent = tr_.bytes_sent();
    if (!o_.netdev.empty()) {
      const double bytes = double(n1.tx_bytes - n0.tx_bytes);
      const double pkts = double(n1.tx_packets - n0.tx_packets);
      s->wire_bytes += bytes;
      s->wire_payload += bytes - double(kFrameHeaderBytes) * pkts;
      s->retrans += double(n1.retrans_segs - n0.retrans_segs);
    }
    CheckRun(a, buf, *s, index);
    if (index == o_.reps - 1) {
      double num = 0, den = 0;
      ErrorSums(N, buf, num, den);
      const double e = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
      // MPI_MAX keeps a NaN only when it comes first: a non-finite error goes in as +inf.
      s->rel_error = coll_.Max(std::isfinite(e) ? e : INFINITY, "the error check");
    }
  }

  // A timed run's output on this rank: every element finite, and for CERAR and the ring (which
  // repeat a run bit for bit) the same bytes in every run. A failure ends the job with one line
  // from the rank that saw it (AbortOnError in main), before any figure of the size is printed.
  void CheckRun(const Algorithm& a, const std::vector<T>& buf, Samples& s, int index) {
    const OutputCheck c = CheckOutput(buf);
    const std::string what = "rank " + std::to_string(tr_.rank()) + ": " +
                             (a.design_name.empty() ? a.name : a.name + ":" + a.design_name) +
                             " at " + FormatSize(buf.size() * sizeof(T)) + ", timed run " +
                             std::to_string(index + 1) + " of " + std::to_string(o_.reps) + ": ";
    if (c.non_finite)
      throw NumericalError(what + std::to_string(c.non_finite) + " of " +
                           std::to_string(buf.size()) + " output elements are NaN or infinite");
    if ((a.name == "cerar" || a.name == "ring") && !s.digests.empty() &&
        c.digest != s.digests.front())
      throw NumericalError(what + "the output differs from timed run 1's, but " + a.name +
                           " repeats a run bit for bit");
    s.digests.push_back(c.digest);
  }

  Row MakeRow(const Algorithm& a, const Samples& s, std::size_t size_bytes, double load) {
    Row row;
    row.algorithm = a.name;
    row.design = a.design_name;
    row.N = tr_.size();
    row.c = a.design ? a.design->c() : 0;
    row.accumulation = ToString(a.options.accumulation);
    row.reps = o_.reps;
    row.rate_mbit = o_.rate_mbit;
    row.size_bytes = size_bytes;
    row.median_s = Median(s.times);
    row.min_s = *std::min_element(s.times.begin(), s.times.end());
    row.max_s = *std::max_element(s.times.begin(), s.times.end());
    if (a.name == "cerar" || a.name == "ring")
      row.bytes_sent = static_cast<long long>(coll_.Max(double(s.bytes_sent), "the byte count"));
    if (s.expected) row.expected = static_cast<long long>(*s.expected);
    const double runs = double(s.times.size());
    if (!o_.netdev.empty()) {
      row.wire_bytes = coll_.Max(s.wire_bytes / runs, "the frame count");
      row.wire_payload = coll_.Max(s.wire_payload / runs, "the frame count");
      row.retrans = coll_.Max(s.retrans / runs, "the frame count");
      if (o_.rate_mbit > 0)
        row.link_fraction = LinkBytesForPayload(row.wire_payload) /
                            (o_.rate_mbit * 1e6 / 8 * row.median_s);
    }
    row.cpu_s = coll_.Sum(Median(s.cpu), "the CPU time") / tr_.size();
    if (a.name == "cerar" || a.name == "ring") {
      row.wait_s = coll_.Sum(Median(s.wait), "the wait time") / tr_.size();
      row.compute_s = coll_.Sum(Median(s.compute), "the compute time") / tr_.size();
      row.progress_s = coll_.Sum(Median(s.progress), "the progress time") / tr_.size();
    }
    row.rel_error = s.rel_error;
    if (a.design && a.design->figures()) {
      const auto& pe = a.design->figures()->predicted_error;
      const auto it = pe.find(ModelArithmetic(opt_.dtype, a.options.accumulation));
      if (it != pe.end()) row.predicted_error = it->second;
    }
    row.load1 = load;
    return row;
  }

  const Options& o_;
  const Plan& plan_;
  const std::vector<Design>& designs_;
  Transport& tr_;
  Collectives& coll_;
  AllReduceOptions opt_;
  Watchdog watchdog_;
  MPI_Comm mpi_ring_;
};

std::string CsvText(const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "algorithm,design,N,c,rate_mbit,size_bytes,reps,median_s,min_s,max_s,"
         "bytes_sent_per_rank,expected_bytes_per_rank,wire_bytes_per_rank,"
         "wire_payload_per_rank,retrans_segs_per_rank,link_fraction,cpu_s_per_rank,rel_error,"
         "predicted_error,load1,wait_s_per_rank,compute_s_per_rank,progress_s_per_rank,"
         "accumulation\n";
  out.precision(9);
  auto opt = [&](double v) {
    if (v >= 0) out << v;
  };
  for (const Row& r : rows) {
    out << r.algorithm << "," << r.design << "," << r.N << "," << r.c << "," << r.rate_mbit
        << "," << r.size_bytes << "," << r.reps << "," << r.median_s << "," << r.min_s << ","
        << r.max_s << ",";
    if (r.bytes_sent >= 0) out << r.bytes_sent;
    out << ",";
    if (r.expected >= 0) out << r.expected;
    out << ",";
    opt(r.wire_bytes);
    out << ",";
    opt(r.wire_payload);
    out << ",";
    opt(r.retrans);
    out << ",";
    opt(r.link_fraction);
    out << "," << r.cpu_s << "," << r.rel_error << ",";
    opt(r.predicted_error);
    out << "," << r.load1 << ",";
    opt(r.wait_s);
    out << ",";
    opt(r.compute_s);
    out << ",";
    opt(r.progress_s);
    out << "," << r.accumulation << "\n";
  }
  return out.str();
}

void PrintRows(const std::vector<Row>& rows) {
  double ring = 0;
  for (const Row& r : rows)
    if (r.algorithm == "ring") ring = r.median_s;
  for (const Row& r : rows) {
    const std::string name = r.design.empty() ? r.algorithm : r.algorithm + ":" + r.design;
    char link[16] = "  n/a", bytes[24] = "n/a", ratio[16] = "n/a";
    if (r.link_fraction >= 0) std::snprintf(link, sizeof link, "%5.1f%%", 100 * r.link_fraction);
    if (r.bytes_sent >= 0) std::snprintf(bytes, sizeof bytes, "%lld", r.bytes_sent);
    else if (r.wire_payload >= 0) std::snprintf(bytes, sizeof bytes, "~%.0f", r.wire_payload);
    if (ring > 0) std::snprintf(ratio, sizeof ratio, "%.3f", r.median_s / ring);
    std::printf("%-36s %8s %10.3e %7s %14s %7s %8.3f %10.3e\n", name.c_str(),
                FormatSize(r.size_bytes).c_str(), r.median_s, ratio, bytes, link, r.cpu_s,
                r.rel_error);
  }
}

// "1MiB,64KiB" for the header.
std::string FormatSizes(const std::vector<std::size_t>& sizes) {
  std::string out;
  for (std::size_t b : sizes) out += (out.empty() ? "" : ",") + FormatSize(b);
  return out;
}

int Main(int argc, char** argv) {
  CLI::App app{"CERAR vs exact ring vs MPI_Allreduce (run under mpiexec)"};
  Options o;
  AddOptions(app, o);
  cli::CheckEveryValue(app);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    if (rank == 0) app.exit(e);
    return 0;
  } catch (const CLI::ParseError& e) {
    const std::string line = std::string(e.what()) + " (see cerar-bench --help)";
    // A rank whose command line differs (MPMD) may be the only one to fail here: it says why
    // and ends the job (AbortOnError in main) instead of leaving the others waiting for it until
    // --timeout. Alone, it just stops.
    if (size > 1) throw InvalidArgument(line);
    std::fprintf(stderr, "cerar: [rank 0] %s\n", Printable(line, 4096).c_str());
    return 2;
  }
  Collectives coll(MPI_COMM_WORLD, o.timeout);
  AgreeOnArguments(coll, app.config_to_str(true, false));
  Plan plan;
  try {
    plan = MakePlan(o);
  } catch (const InvalidArgument& e) {
    // Every rank has the same arguments, so every rank stops here the same way: one line each,
    // and no MPI_Abort (and its pause) is needed.
    std::fprintf(stderr, "cerar: [rank %d] %s\n", rank, Printable(e.what(), 4096).c_str());
    return 2;
  }
  const AllReduceOptions& opt = plan.options;
  // The CSV (rank 0's, rewritten at each size) must be writable before anything runs.
  std::string csv_error;
  if (rank == 0 && !o.csv.empty()) {
    try {
      cli::RequireWritable(o.csv, true);
    } catch (const IoError& e) {
      csv_error = std::string("--csv: ") + e.what();
    }
  }
  if (coll.Max(csv_error.empty() ? 0 : 1, "the --csv check") > 0) {
    if (rank == 0) std::fprintf(stderr, "cerar: [rank 0] %s\n", csv_error.c_str());
    return 2;
  }
  std::vector<Design> designs;
  for (const auto& path : o.designs) {
    designs.push_back(LoadDesign(path));
    if (designs.back().N() != coll.size())
      throw InvalidArgument("design file " + path + " is for N = " +
                            std::to_string(designs.back().N()) + " ranks but mpiexec started " +
                            std::to_string(coll.size()));
  }
  // Memory for the largest size, before any run (memory.h: the OOM killer would end one rank
  // mid-run instead). Each node's first rank says so; every rank stops.
  if (!plan.sizes.empty()) {
    std::vector<std::string> names;
    std::vector<int> cs;
    for (std::size_t d = 0; d < designs.size(); ++d)
      names.push_back(Stem(o.designs[d])), cs.push_back(designs[d].c());
    const std::size_t largest = *std::max_element(plan.sizes.begin(), plan.sizes.end());
    // The node's least MemAvailable: every rank of a node decides the same, so the one that
    // prints (the node's first) is never silent while another refuses.
    const Collectives::Node node = coll.ThisNode(AvailableMemoryBytes());
    const std::string refusal =
        MemoryRefusal(RankMemoryNeed(plan, cs, names, coll.size(), largest), largest,
                      node.ranks, node.min_value);
    if (coll.Max(refusal.empty() ? 0 : 1, "the memory check") > 0) {
      if (!refusal.empty() && node.rank == 0)
        std::fprintf(stderr, "cerar: [rank %d] %s\n", rank, refusal.c_str());
      return 2;
    }
  }
  if (!o.netdev.empty()) ReadNetCounters(o.netdev);  // fail before any run
  MpiTransportOptions mo;
  mo.timeout_s = o.timeout;
  auto tr = CreateMpiTransport(MPI_COMM_WORLD, mo);
  // Made here, so that a launch without coll_tuned_use_dynamic_rules fails before the header.
  struct OwnedComm {
    MPI_Comm comm = MPI_COMM_NULL;
    ~OwnedComm() {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
  } mpi_ring;
  const auto& algos = plan.algorithms;
  if (std::find(algos.begin(), algos.end(), "mpi_allreduce_ring") != algos.end())
    mpi_ring.comm = coll.ForcedAllreduceComm(4, "mpi_allreduce_ring");
  if (rank == 0) {
    char link[48] = "";
    if (o.rate_mbit > 0) std::snprintf(link, sizeof link, ", link %g Mbit/s", o.rate_mbit);
    std::printf("cerar-bench: N = %d, %s, segment %s, %s slots, median of %d interleaved runs%s\n",
                coll.size(), o.dtype.c_str(), FormatSizes(plan.segments).c_str(), o.slots.c_str(),
                o.reps, link);
    std::printf("%-36s %8s %10s %7s %14s %7s %8s %10s\n", "algorithm", "size", "median_s",
                "x ring", "bytes/rank", "link", "cpu_s", "rel_error");
  }
  std::vector<Row> rows;
  for (std::size_t size_bytes : plan.sizes) {
    std::vector<Row> r;
    if (opt.dtype == DType::kFloat32)
      r = Bench<float>(o, plan, designs, *tr, coll, mpi_ring.comm).Size(size_bytes);
    else
      r = Bench<double>(o, plan, designs, *tr, coll, mpi_ring.comm).Size(size_bytes);
    if (rank == 0) {
      PrintRows(r);
      std::fflush(stdout);
    }
    rows.insert(rows.end(), r.begin(), r.end());
    // Rewritten (atomically) after every size: a later failure keeps the sizes measured.
    if (rank == 0 && !o.csv.empty()) WriteFileAtomically(o.csv, CsvText(rows));
  }
  if (rank == 0 && !o.csv.empty()) std::printf("wrote %s\n", o.csv.c_str());
  return 0;
}

}  // namespace
}  // namespace cerar::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = cerar::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    cerar::AbortOnError(e, 2);  // one failing rank ends the whole job with its message
  }
  MPI_Finalize();
  return code;
}
