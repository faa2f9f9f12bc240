// cerar-bench-design: prints one line per measurement, e.g.
//   make eps N=32 c=128 eps=0.1 float64: 1.23 s  (err_op ..., kappa_dec ...)
// Usage: cerar-bench-design [--quick]   (--quick: small sizes only)
// Wall-clock seconds of one run each; the machine may be shared, so rerun when it is quiet.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "cerar/design/toolkit.h"
#include "cerar/format/errors.h"

namespace {

using cerar::Design;
using namespace cerar::design;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Line(const char* what, int N, int c, double eps, Precision p, const Design& d, double s) {
  const auto& f = *d.figures();
  std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-7s: %8.3f s  (figures in %s: err_op %.3e, "
              "kappa_dec %.3e, kappa_enc %.3e)\n",
              what, N, c, eps, ToString(p).c_str(), s, f.precision.c_str(), f.err_op,
              f.kappa_dec, f.kappa_enc);
  std::fflush(stdout);
}

void Bench(int N, int c, double eps, Precision p) {
  ConstructionOptions o;
  o.N = N;
  o.c = c;
  o.eps = eps;
  o.precision = p;
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Design> made;
  try {
    made = MakeConstruction(o);
  } catch (const cerar::NumericalError& e) {  // a timing line, not a failure of the benchmark
    std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-7s: %8.3f s  (NumericalError: %s)\n",
                "make eps", N, c, eps, ToString(p).c_str(), Seconds(t0), e.what());
    return;
  }
  const Design& d = *made;
  Line("make eps", N, c, eps, p, d, Seconds(t0));
  if (p == Precision::kAuto) return;
  t0 = std::chrono::steady_clock::now();
  const auto f = Analyse(d, p);
  std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-7s: %8.3f s  (err_op %.3e)\n", "analyse stored", N,
              c, eps, ToString(p).c_str(), Seconds(t0), f.err_op);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  try {
    // Targets: N=32 c=128 float64 make (generate + analyse) < 5 s; N=16 c=64 mp50 < 60 s.
    Bench(8, 16, 1e-2, Precision::kFloat64);
    Bench(8, 16, 1e-2, Precision::kMp50);
    Bench(16, 64, 1e-1, Precision::kFloat64);
    if (!quick) {
      Bench(32, 128, 1e-1, Precision::kFloat64);  // target < 5 s
      Bench(16, 64, 1e-1, Precision::kMp50);      // target < 60 s
      Bench(16, 64, 1e-3, Precision::kMp50);
      Bench(32, 64, 1e-2, Precision::kFloat64);
      Bench(64, 128, 1e-2, Precision::kFloat64);
      Bench(64, 256, 1e-1, Precision::kFloat64);
      Bench(8, 32, 1e-3, Precision::kAuto);
      auto t0 = std::chrono::steady_clock::now();
      const TuneResult t = TuneEps(Construction::kEps, 8, 20, Arithmetic::kFloat32);
      std::printf("%-22s N=8   c=20   float32: %8.3f s  (eps %.3e, predicted %.3e)\n", "tune eps",
                  Seconds(t0), t.eps, t.design.figures()->predicted_error.at("float32"));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cerar-bench-design: %s\n", e.what());
    return 2;
  }
  return 0;
}
