// cerar_cuda_bench: throughput of the CUDA back end's Encode, Step and Decode, in GB/s of memory
// traffic, beside a device-to-device cudaMemcpy measured on the same GPU in the same run.
//   cerar_cuda_bench [--n ELEMENTS] [--N RANKS] [--c 4,8,16] [--dtype f32,bf16] [--reps R]
//                    [--accumulation buffer,f64-state] [--csv FILE]
// Traffic counted per call: Encode reads n and writes L*m; Decode reads c*m and reads+writes n;
// Step (len = n) reads 3 and writes 2 vectors; the copy reads and writes n. Under an
// accumulation whose workspace rows are float64 (f64-state on f32: StateElementBytes = 8) the
// rows (L*m of Encode, c*m of Decode, e_now, e_back and obs of Step) count 8 bytes an element.
// Combinations the back end does not support (a wide accumulation on bf16/f16) are skipped.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "checks.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "cerar/runtime/cuda/device.h"

namespace {

using cerar::DType;

struct Options {
  std::size_t n = std::size_t(1) << 26;
  int N = 8;
  std::vector<int> cs = {4, 8, 16};
  std::vector<DType> dtypes = {DType::kFloat32, DType::kBFloat16};
  std::vector<cerar::Accumulation> accumulations = {cerar::Accumulation::kBuffer};
  int reps = 20;
  std::string csv;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}


long ParsePositive(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || x < 1)
    throw cerar::InvalidArgument(flag + " " + v + ": expected a positive integer");
  return x;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw cerar::InvalidArgument(flag + ": missing value");
    const std::string v = argv[++i];
    if (flag == "--n") o.n = std::size_t(ParsePositive(flag, v));
    else if (flag == "--N") o.N = int(ParsePositive(flag, v));
    else if (flag == "--reps") o.reps = int(ParsePositive(flag, v));
    else if (flag == "--csv") o.csv = v;
    else if (flag == "--c") {
      o.cs.clear();
      for (const auto& s : Split(v)) o.cs.push_back(int(ParsePositive(flag, s)));
    } else if (flag == "--dtype") {
      o.dtypes.clear();
      for (const auto& s : Split(v)) o.dtypes.push_back(cerar::ParseDType(s));
    } else if (flag == "--accumulation") {
      o.accumulations.clear();
      for (const auto& s : Split(v)) o.accumulations.push_back(cerar::ParseAccumulation(s));
    } else {
      throw cerar::InvalidArgument("unknown option " + flag);
    }
  }
  if (o.N < 2) throw cerar::InvalidArgument("--N " + std::to_string(o.N) + ": expected N >= 2");
  return o;
}

// Seconds per call: best of 3 trials of `reps` calls each, timed with events on `stream`.
double Time(cudaStream_t stream, int reps, const std::function<void()>& call) {
  cudaEvent_t start, stop;
  CERAR_CUDA_CHECK(cudaEventCreate(&start));
  CERAR_CUDA_CHECK(cudaEventCreate(&stop));
  call();  // warm-up (cuBLAS heuristics, first-launch costs)
  double best = 1e30;
  for (int trial = 0; trial < 3; ++trial) {
    CERAR_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) call();
    CERAR_CUDA_CHECK(cudaEventRecord(stop, stream));
    CERAR_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CERAR_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, double(ms) * 1e-3 / reps);
  }
  CERAR_CUDA_CHECK(cudaEventDestroy(start));
  CERAR_CUDA_CHECK(cudaEventDestroy(stop));
  return best;
}

int Run(const Options& o) {
  const auto avail = cerar::cuda::QueryDevices();
  if (avail.count == 0) {
    std::cerr << "cerar_cuda_bench: no CUDA device: " << avail.reason << "\n";
    return 3;
  }
  std::cout << "device 0: " << cerar::cuda::DescribeDevice(0) << "\n";
  cudaStream_t stream;
  CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto backend = cerar::CreateCudaBackend(stream);

  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) throw cerar::IoError("cannot write " + o.csv);
    csv << "kernel,dtype,accumulation,N,c,n,bytes_per_call,seconds_per_call,GBps,copy_GBps,"
           "fraction_of_copy\n";
  }
  cerar::Accumulation acc = cerar::Accumulation::kBuffer;
  auto report = [&](const char* kernel, DType t, int c, double bytes, double seconds,
                    double copy_gbps) {
    const double gbps = bytes / seconds * 1e-9;
    std::printf("%-7s %-5s %-12s N=%-3d c=%-3d n=%-10zu %9.1f us %8.1f GB/s  %5.1f%% of copy\n",
                kernel, cerar::ToString(t).c_str(), cerar::ToString(acc).c_str(), o.N, c, o.n,
                seconds * 1e6, gbps, 100.0 * gbps / copy_gbps);
    if (csv)
      csv << kernel << ',' << cerar::ToString(t) << ',' << cerar::ToString(acc) << ',' << o.N
          << ',' << c << ',' << o.n << ',' << std::size_t(bytes) << ',' << seconds << ','
          << gbps << ',' << copy_gbps << ',' << gbps / copy_gbps << '\n';
  };

  for (DType t : o.dtypes)
  for (cerar::Accumulation accumulation : o.accumulations) {
    if (!backend->SupportsAccumulation(t, accumulation)) {
      std::printf("skipped: %s with accumulation %s is not supported\n",
                  cerar::ToString(t).c_str(), cerar::ToString(accumulation).c_str());
      continue;
    }
    acc = accumulation;
    backend->SetAccumulation(accumulation);
    const std::size_t es = cerar::SizeOf(t);
    const std::size_t rs = backend->StateElementBytes(t);  // workspace rows
    // The gradient buffer, large enough for c * ceil(n / c) elements for every c measured.
    std::size_t padded = o.n;
    for (int c : o.cs) padded = std::max(padded, std::size_t(c) * ((o.n + std::size_t(c) - 1) / std::size_t(c)));
    void* a = backend->Allocate(padded * es);
    void* b = backend->Allocate(o.n * es);
    CERAR_CUDA_CHECK(cudaMemsetAsync(a, 0, padded * es, stream));
    const double copy_s = Time(stream, o.reps, [&] {
      CERAR_CUDA_CHECK(cudaMemcpyAsync(b, a, o.n * es, cudaMemcpyDeviceToDevice, stream));
    });
    const double copy_gbps = 2.0 * double(o.n * es) / copy_s * 1e-9;
    report("copy", t, 0, 2.0 * double(o.n * es), copy_s, copy_gbps);
    // Step on n elements: e_now (a row), y_prev, e_back (a row) in; x, obs (a row) out.
    void* en = backend->Allocate(o.n * rs);
    void* c3 = backend->Allocate(o.n * rs);
    void* d4 = backend->Allocate(o.n * es);
    void* e5 = backend->Allocate(o.n * rs);
    CERAR_CUDA_CHECK(cudaMemsetAsync(en, 0, o.n * rs, stream));
    CERAR_CUDA_CHECK(cudaMemsetAsync(c3, 0, o.n * rs, stream));
    CERAR_CUDA_CHECK(cudaMemsetAsync(b, 0, o.n * es, stream));
    const double step_s = Time(stream, o.reps, [&] { backend->Step(t, en, b, c3, d4, e5, o.n); });
    report("step", t, 0, double(o.n) * double(2 * es + 3 * rs), step_s, copy_gbps);
    backend->Free(en);
    backend->Free(c3);
    backend->Free(d4);
    backend->Free(e5);
    backend->Free(b);

    for (int c : o.cs) {
      const int L = c + o.N - 2;
      const std::size_t m = (o.n + std::size_t(c) - 1) / std::size_t(c);
      cerar::MatrixXd E = cerar::MatrixXd::Constant(L, c, 0.5), D = cerar::MatrixXd::Identity(c, c);
      backend->SetMatrices(E, D);
      void* enc = backend->Allocate(std::size_t(L) * m * rs);
      const double enc_s = Time(stream, o.reps, [&] { backend->Encode(t, a, m, 0, m, c, {0, L}, enc, m); });
      report("encode", t, c, double(std::size_t(c) * m * es + std::size_t(L) * m * rs), enc_s,
             copy_gbps);
      // Decode reads the first c rows of enc as the observations.
      const double dec_s = Time(stream, o.reps, [&] { backend->Decode(t, enc, m, a, m, 0, m, c, 1.0); });
      report("decode", t, c, double(std::size_t(c) * m * rs + 2 * std::size_t(c) * m * es),
             dec_s, copy_gbps);
      backend->Free(enc);
    }
    backend->Free(a);
  }
  backend.reset();
  CERAR_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(Parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "cerar_cuda_bench: " << e.what() << "\n";
    return 2;
  }
}
