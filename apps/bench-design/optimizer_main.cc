// cerar-bench-optimizer: cost of one optimiser evaluation, per rank: err_rms and both condition
// numbers (3N gradients, the kappa-bounded search) and the predicted float32 error alone (N
// gradients, the precision-aware search of --tune).
//   cerar-bench-optimizer MODE [--quick]
//   allocating  Evaluator::Evaluate, fresh gradient storage each call, default allocator
//   reused      Evaluator::EvaluateInto a buffer kept across calls (what the search does)
//   kept        reused, after KeepAllocatorMemory() (what the cerar CLI does)
// One mode per process: glibc's dynamic thresholds remember earlier frees, so modes run in one
// process would measure each other. `scripts/bench optimizer` runs all three side by side.
// Figures, not a timed test; rerun on a quiet machine.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cerar/design/optimizer.h"
#include "cli_checks.h"
#include "design/optimizer_objective.h"

namespace {

using cerar::design::opt::Evaluator;
using cerar::design::opt::Parametrisation;

// Milliseconds per evaluation with gradients, best of three batches of `reps`.
template <class F>
double MsPerEvaluation(int reps, const F& evaluate) {
  double best = 1e300;
  for (int batch = 0; batch < 3; ++batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) evaluate();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms / reps);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  bool quick = false;
  CLI::App app{"Cost of one optimiser evaluation (one MODE per process)", "cerar-bench-optimizer"};
  app.add_option("mode", mode, "allocating | reused | kept")
      ->required()
      ->check(CLI::IsMember({"allocating", "reused", "kept"}));
  app.add_flag("--quick", quick, "small cases only");
  cerar::cli::CheckEveryValue(app);
  if (const int rc = cerar::cli::ParseArguments(app, argc, argv); rc >= 0) return rc;
  try {
    if (mode == "kept" && !cerar::design::KeepAllocatorMemory())
      std::printf("(KeepAllocatorMemory: not glibc, nothing done)\n");
    struct Case {
      int N, c;
      double eps;
    };
    std::vector<Case> cases{{4, 8, 0.1}, {8, 24, 0.1}};
    if (!quick) {
      cases.push_back({16, 32, 0.05});
      cases.push_back({16, 48, 0.05});
    }
    const int reps = quick ? 10 : 50;
    for (const Case& k : cases) {
      const Evaluator ev(k.N, k.c, Parametrisation::kPerRank);
      const Eigen::VectorXd x = cerar::design::opt::EpsPoint(k.N, k.c, k.eps, true);
      for (const auto norm : {Evaluator::ErrorNorm::kFrobenius, Evaluator::ErrorNorm::kPredicted}) {
        const bool kappas = norm == Evaluator::ErrorNorm::kFrobenius;
        double ms = 0;
        if (mode == "allocating") {
          ms = MsPerEvaluation(reps, [&] { (void)ev.Evaluate(x.data(), norm, true, kappas); });
        } else {
          std::vector<double> gradient(std::size_t((kappas ? 3 : 1) * k.N) * ev.size());
          Evaluator::Result r;
          ms = MsPerEvaluation(reps, [&] {
            ev.EvaluateInto(x.data(), norm, r, gradient.data(), ev.size(), kappas);
          });
        }
        std::printf("%-10s N=%-3d c=%-3d variables=%-6d %-22s %8.3f ms per evaluation with "
                    "gradients\n",
                    mode.c_str(), k.N, k.c, ev.size(),
                    kappas ? "err_rms, kappas" : "predicted float32", ms);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cerar-bench-optimizer: %s\n", e.what());
    return 2;
  }
  return 0;
}
