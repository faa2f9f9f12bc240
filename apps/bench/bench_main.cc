// cerar-bench: mpiexec -n N cerar-bench --design FILE [--sizes 4KiB,...,256MiB] [--csv FILE]
//              [--dtype f32|f64] [--reps R] [--segment BYTES] [--timeout S]
// For each size (bytes per rank): CERAR, the exact ring (same MPI transport) and MPI_Allreduce
// on the same random inputs. Median wall time over R runs (each run's time is the slowest
// rank's), bytes sent per rank (counted by the transport; MPI_Allreduce's are not observable:
// empty), and the relative error ||out_j - S|| / ||S||, max over ranks, against the exact sum
// S reduced in long double. A table on rank 0's stdout; the CSV is written atomically.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/mpi_transport.h"
#include "sizes.h"

namespace cerar::bench {
namespace {

struct Row {
  std::string algorithm;
  int N = 0, c = 0;
  std::size_t size_bytes = 0;
  double median_s = 0;
  long long bytes_sent = -1;  // -1: not observable
  double rel_error = 0;
};

template <typename T>
MPI_Datatype MpiType() {
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

// max over ranks of ||out - S|| / ||S||, S reduced in long double chunk by chunk.
template <typename T>
double RelError(const std::vector<T>& input, const std::vector<T>& out) {
  const std::size_t chunk = std::size_t{1} << 18;
  std::vector<long double> mine(chunk), sum(chunk);
  long double num = 0, den = 0;
  for (std::size_t k0 = 0; k0 < input.size(); k0 += chunk) {
    const std::size_t n = std::min(chunk, input.size() - k0);
    for (std::size_t k = 0; k < n; ++k) mine[k] = input[k0 + k];
    MPI_Allreduce(mine.data(), sum.data(), int(n), MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (std::size_t k = 0; k < n; ++k) {
      const long double d = (long double)out[k0 + k] - sum[k];
      num += d * d;
      den += sum[k] * sum[k];
    }
  }
  double e = den > 0 ? double(std::sqrt(num / den)) : (num > 0 ? INFINITY : 0.0), worst = 0;
  MPI_Allreduce(&e, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

template <typename T>
std::vector<Row> BenchSize(const Design& design, Transport& tr, std::size_t size_bytes, int reps,
                           const AllReduceOptions& opt) {
  const std::size_t count = size_bytes / sizeof(T);
  if (count > std::size_t(INT_MAX))
    throw InvalidArgument("size " + FormatSize(size_bytes) + " has more than INT_MAX elements, "
                          "beyond MPI_Allreduce's int count");
  std::vector<T> input(count), buf(count);
  std::mt19937_64 rng(1234567 + tr.rank());
  std::normal_distribution<double> normal(0, 1);
  for (auto& v : input) v = T(normal(rng));
  auto be = CreateCpuBackend();
  CodedAllReduce coded(design, tr, *be, count, opt);
  RingAllReduce ring(tr, count, opt);
  std::vector<Row> rows;
  auto measure = [&](const std::string& name, auto&& run, bool counted) {
    std::vector<double> times;
    std::uint64_t bytes = 0;
    for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
      std::memcpy(buf.data(), input.data(), count * sizeof(T));
      MPI_Barrier(MPI_COMM_WORLD);
      tr.ResetCounters();
      const double t0 = MPI_Wtime();
      run();
      double dt = MPI_Wtime() - t0, slowest = 0;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 0) times.push_back(slowest);
      bytes = tr.bytes_sent();
    }
    std::sort(times.begin(), times.end());
    Row row;
    row.algorithm = name;
    row.N = tr.size();
    row.c = design.c();  // the design the row belongs to, for every algorithm
    row.size_bytes = size_bytes;
    row.median_s = times[times.size() / 2];
    if (counted) {
      unsigned long long mine = bytes, most = 0;
      MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
      row.bytes_sent = static_cast<long long>(most);
    }
    row.rel_error = RelError(input, buf);
    rows.push_back(row);
  };
  measure("cerar", [&] { coded.Run(buf.data()); }, true);
  measure("ring", [&] { ring.Run(buf.data()); }, true);
  measure("mpi_allreduce", [&] {
    if (count)
      MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(count), MpiType<T>(), MPI_SUM, MPI_COMM_WORLD);
  }, false);
  return rows;
}

int Main(int argc, char** argv) {
  CLI::App app{"CERAR vs exact ring vs MPI_Allreduce (run under mpiexec)"};
  std::string design_path, sizes_text = "4KiB,64KiB,1MiB,16MiB,256MiB", csv, dtype_text = "f32";
  int reps = 5;
  std::size_t segment = std::size_t{1} << 20;
  double timeout = 60;
  app.add_option("--design", design_path, "design file")->required();
  app.add_option("--sizes", sizes_text, "bytes per rank, comma-separated")->capture_default_str();
  app.add_option("--csv", csv, "write the results as CSV");
  app.add_option("--dtype", dtype_text, "f32 | f64")->capture_default_str();
  app.add_option("--reps", reps, "timed runs per size (median)")->capture_default_str();
  app.add_option("--segment", segment, "pipelining segment, bytes")->capture_default_str();
  app.add_option("--timeout", timeout, "seconds to wait for a peer")->capture_default_str();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  if (reps < 1) throw InvalidArgument("--reps " + std::to_string(reps) + " must be >= 1");
  AllReduceOptions opt;
  if (dtype_text == "f32") opt.dtype = DType::kFloat32;
  else if (dtype_text == "f64") opt.dtype = DType::kFloat64;
  else throw InvalidArgument("--dtype '" + dtype_text + "' must be f32 or f64");
  opt.segment_bytes = segment;
  const std::vector<std::size_t> sizes = ParseSizes(sizes_text);
  const Design design = LoadDesign(design_path);
  MpiTransportOptions mo;
  mo.timeout_s = timeout;
  auto tr = CreateMpiTransport(MPI_COMM_WORLD, mo);
  if (design.N() != tr->size())
    throw InvalidArgument("design file " + design_path + " is for N = " +
                          std::to_string(design.N()) + " ranks but mpiexec started " +
                          std::to_string(tr->size()));
  std::vector<Row> rows;
  if (rank == 0) {
    std::printf("cerar-bench: %s, N = %d, c = %d, %s, median of %d runs\n", design_path.c_str(),
                design.N(), design.c(), dtype_text.c_str(), reps);
    std::printf("%-14s %10s %12s %14s %16s %11s\n", "algorithm", "size", "median_s", "GB/s (size)",
                "bytes_sent/rank", "rel_error");
  }
  for (std::size_t size : sizes) {
    auto r = opt.dtype == DType::kFloat32 ? BenchSize<float>(design, *tr, size, reps, opt)
                                          : BenchSize<double>(design, *tr, size, reps, opt);
    for (const Row& row : r) {
      if (rank == 0)
        std::printf("%-14s %10s %12.6f %14.3f %16s %11.3e\n", row.algorithm.c_str(),
                    FormatSize(row.size_bytes).c_str(), row.median_s,
                    row.median_s > 0 ? row.size_bytes / row.median_s / 1e9 : 0.0,
                    row.bytes_sent >= 0 ? std::to_string(row.bytes_sent).c_str() : "n/a",
                    row.rel_error);
      rows.push_back(row);
    }
    if (rank == 0) std::fflush(stdout);
  }
  if (rank == 0 && !csv.empty()) {
    std::ostringstream out;
    out << "algorithm,N,c,size_bytes,median_s,bytes_sent_per_rank,rel_error\n";
    out.precision(9);
    for (const Row& row : rows) {
      out << row.algorithm << "," << row.N << "," << row.c << "," << row.size_bytes << ","
          << row.median_s << ",";
      if (row.bytes_sent >= 0) out << row.bytes_sent;
      out << "," << row.rel_error << "\n";
    }
    WriteFileAtomically(csv, out.str());
    std::printf("wrote %s\n", csv.c_str());
  }
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
