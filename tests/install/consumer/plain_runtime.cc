// Consumer of cerar::runtime alone: loads an installed catalogue design and runs the coded
// all-reduce on N threads (in-process transport); the result must equal the exact sum within the
// design's predicted error. Exit 0 on success, 1 with a message otherwise.
#include <cerar/format/design.h>
#include <cerar/format/design_file.h>
#include <cerar/errors.h>
#include <cerar/runtime/allreduce.h>
#include <cerar/runtime/backend.h>
#include <cerar/runtime/inprocess.h>
#include <cerar/runtime/transport.h>

// What a runtime-only consumer must not compile: checked by the preprocessor.
#if defined(NLOHMANN_JSON_VERSION_MAJOR) || defined(INCLUDE_NLOHMANN_JSON_HPP_)
#error "cerar's runtime headers included nlohmann/json"
#endif
#if defined(MPI_VERSION) || defined(OMPI_MPI_H)
#error "cerar's runtime headers included <mpi.h>"
#endif
#if defined(__CUDA_RUNTIME_H__) || defined(__CUDA_RUNTIME_API_H__)
#error "cerar's runtime headers included CUDA"
#endif

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: plain_runtime DESIGN.json\n");
    return 2;
  }
  try {
    const cerar::Design design = cerar::LoadDesign(argv[1]);
    const int n = design.N();
    const std::size_t count = 10007;  // not a multiple of c
    std::vector<std::vector<double>> data(n, std::vector<double>(count));
    std::vector<double> exact(count, 0.0);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    for (int r = 0; r < n; ++r)
      for (std::size_t k = 0; k < count; ++k) exact[k] += (data[r][k] = normal(rng));
    cerar::AllReduceOptions options;
    options.dtype = cerar::DType::kFloat64;
    const auto errors = cerar::RunInProcess(n, [&](cerar::Transport& transport) {
      auto backend = cerar::CreateCpuBackend();
      cerar::CodedAllReduce allreduce(design, transport, *backend, count, options);
      allreduce.Run(data[transport.rank()].data());
    });
    for (int r = 0; r < n; ++r) {
      if (errors[r]) {
        std::fprintf(stderr, "rank %d: %s\n", r, cerar::ExceptionMessage(errors[r]).c_str());
        return 1;
      }
    }
    const double predicted = design.figures() ? design.figures()->err_rms : 0.0;
    double worst = 0;
    for (int r = 0; r < n; ++r) {
      double num = 0, den = 0;
      for (std::size_t k = 0; k < count; ++k) {
        num += (data[r][k] - exact[k]) * (data[r][k] - exact[k]);
        den += exact[k] * exact[k];
      }
      worst = std::max(worst, std::sqrt(num / den));
    }
    std::printf("plain_runtime: N = %d, c = %d, relative error %.3g (design err_rms %.3g)\n", n,
                design.c(), worst, predicted);
    // err_rms is the expected relative error on i.i.d. data; a factor 3 covers the sampling.
    return worst <= 3 * predicted + 1e-12 ? 0 : 1;
  } catch (const cerar::Error& e) {
    std::fprintf(stderr, "plain_runtime: %s\n", e.what());
    return 1;
  }
}
