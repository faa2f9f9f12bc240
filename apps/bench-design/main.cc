// cerar-bench-design: prints one line per measurement, e.g.
//   make eps N=32 c=128 eps=0.1 float64: 1.23 s  (err_op ..., kappa_dec ...)
// Usage: cerar-bench-design [--quick]   (--quick: small sizes only)
// Wall-clock seconds of one run each, and the process's CPU seconds beside them (all threads):
// on a shared machine the wall time grows with the load, the CPU time much less.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "cli_checks.h"

namespace {

using cerar::Design;
using namespace cerar::design;

struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  // "  12.345 s (cpu  20.12 s)"
  std::string Text() const {
    char b[64];
    std::snprintf(b, sizeof b, "%8.3f s (cpu %7.2f s)",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(),
                  double(std::clock() - cpu) / CLOCKS_PER_SEC);
    return b;
  }
};

// "mp100, certified 15 digits" / "mp50, not certified" / "float64".
std::string Arithmetic(const cerar::Figures& f) {
  if (f.precision == "float64") return f.precision;
  if (f.certified_digits.empty()) return f.precision + ", not certified";
  int fewest = 99;
  for (const auto& [name, digits] : f.certified_digits) fewest = std::min(fewest, digits);
  return f.precision + ", certified " + std::to_string(fewest) + " digits";
}

// "mp50 only": one high-precision rung (max_digits 50); "mp<=400": the ladder up to 400 digits.
std::string Requested(Precision p, int max_digits) {
  if (p == Precision::kFloat64) return ToString(p);
  return max_digits == 50 ? "mp50 only" : "mp<=" + std::to_string(max_digits);
}

void Line(const char* what, int N, int c, double eps, const std::string& requested,
          const Design& d, const std::string& s) {
  const auto& f = *d.figures();
  std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-10s: %s  (figures in %s: err_op %.3e, "
              "kappa_dec %.3e, kappa_enc %.3e)\n",
              what, N, c, eps, requested.c_str(), s.c_str(), Arithmetic(f).c_str(), f.err_op,
              f.kappa_dec, f.kappa_enc);
  std::fflush(stdout);
}

// max_digits 50: one high-precision rung, uncertified (the cost before the ladder); the
// default: the certified ladder (docs/error-model.md).
void Bench(int N, int c, double eps, Precision p, int max_digits = kDefaultMaxDigits) {
  ConstructionOptions o;
  o.N = N;
  o.c = c;
  o.eps = eps;
  o.precision = p;
  o.max_digits = max_digits;
  const std::string requested = Requested(p, max_digits);
  Timer t0;
  std::optional<Design> made;
  try {
    made = MakeConstruction(o);
  } catch (const cerar::NumericalError& e) {  // a timing line, not a failure of the benchmark
    std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-10s: %s  (NumericalError: %s)\n", "make eps",
                N, c, eps, requested.c_str(), t0.Text().c_str(), e.what());
    return;
  }
  const Design& d = *made;
  Line("make eps", N, c, eps, requested, d, t0.Text());
  if (p == Precision::kAuto) return;
  t0 = Timer();
  const auto f = Analyse(d, p, max_digits);
  std::printf("%-22s N=%-3d c=%-4d eps=%-7.1e %-10s: %s  (err_op %.3e, %s)\n", "analyse stored",
              N, c, eps, requested.c_str(), t0.Text().c_str(), f.err_op,
              Arithmetic(f).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  CLI::App app{"Timings of design generation and analysis (float64 and mp50)",
               "cerar-bench-design"};
  app.add_flag("--quick", quick, "small sizes only");
  if (const int rc = cerar::cli::ParseArguments(app, argc, argv); rc >= 0) return rc;
  try {
    // Targets: N=32 c=128 float64 make (generate + analyse) < 5 s; N=16 c=64 mp50 < 60 s.
    Bench(8, 16, 1e-2, Precision::kFloat64);
    Bench(8, 16, 1e-2, Precision::kMp50);
    Bench(16, 64, 1e-1, Precision::kFloat64);
    if (!quick) {
      Bench(32, 128, 1e-1, Precision::kFloat64);  // target < 5 s
      // target < 60 s; one rung (as before the ladder) beside the certified ladder
      Bench(16, 64, 1e-1, Precision::kMp50, 50);
      Bench(16, 64, 1e-1, Precision::kMp50);
      Bench(16, 64, 1e-3, Precision::kMp50, 50);
      Bench(16, 64, 1e-3, Precision::kMp50);
      Bench(32, 64, 1e-2, Precision::kFloat64);
      Bench(64, 128, 1e-2, Precision::kFloat64);
      Bench(64, 256, 1e-1, Precision::kFloat64);
      Bench(8, 32, 1e-3, Precision::kAuto);
      Timer t0;
      const TuneResult t = TuneEps(Construction::kEps, 8, 20, Arithmetic::kFloat32);
      std::printf("%-22s N=8   c=20   float32: %s  (eps %.3e, predicted %.3e)\n", "tune eps",
                  t0.Text().c_str(), t.eps, t.design.figures()->predicted_error.at("float32"));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cerar-bench-design: %s\n", e.what());
    return 2;
  }
  return 0;
}
