// cerar simulate FILE --count n: run the protocol in-process (N ranks as threads) on random data
// and compare the measured error with the design's prediction; bytes, workspace and time too.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "cerar/runtime/simulate.h"
#include "cerar/format/printable.h"
#include "cli_util.h"
#include "commands.h"

namespace cerar::cli {
namespace {

struct SimulateArgs {
  std::string path;
  long long count = 1 << 20;
  std::string dtype = "f32";
  std::string accumulate = "buffer";
  std::uint64_t seed = 1;
  bool json = false;
};

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Run a design in-process on random data: measured vs predicted error");
  cmd->add_option("file", a->path, "design file")->required();
  cmd->add_option("--count", a->count, "elements per rank (>= 0)")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "f32 | f64")->capture_default_str();
  cmd->add_option("--accumulate", a->accumulate,
                  "buffer | f64 | f64+feedback | f64-state: encode, ring step and decode in the "
                  "buffer's dtype, or in float64 with each result rounded once (same bytes "
                  "sent), and with the packets' rounding fed back once per lap (N more "
                  "workspace rows), and with the workspace in float64 (twice the workspace)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "random seed")
      ->check(NonNegativeInteger())
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "one JSON object");
  cmd->callback([a] {
    if (a->count < 0)
      throw InvalidArgument("simulate: --count " + std::to_string(a->count) + " must be >= 0");
    // The runtime's one dtype vocabulary (transport.h); the CPU back end runs f32 and f64.
    if (a->dtype != ToString(DType::kFloat32) && a->dtype != ToString(DType::kFloat64))
      throw InvalidArgument("simulate: --dtype '" + Printable(a->dtype) + "' must be f32 or f64");
    const DType dtype = ParseDType(a->dtype);
    if (a->accumulate != ToString(Accumulation::kBuffer) &&
        a->accumulate != ToString(Accumulation::kFloat64) &&
        a->accumulate != ToString(Accumulation::kFloat64Feedback) &&
        a->accumulate != ToString(Accumulation::kFloat64State))
      throw InvalidArgument("simulate: --accumulate '" + Printable(a->accumulate) +
                            "' must be buffer, f64, f64+feedback or f64-state");
    const Accumulation accumulation = ParseAccumulation(a->accumulate);
    Design design = LoadDesign(a->path, DesignLoadOptions());
    SimulateOptions options;
    options.count = static_cast<std::size_t>(a->count);
    options.dtype = dtype;
    options.accumulation = accumulation;
    options.seed = a->seed;
    CheckSimulateFits(design, options, "--count");  // before anything is allocated
    SimulateResult r = Simulate(design, options);
    if (a->json) {
      nlohmann::json j;
      j["N"] = design.N();
      j["c"] = design.c();
      j["count"] = a->count;
      j["dtype"] = a->dtype;
      j["measured_err_rms"] = r.measured_err_rms;
      j["recorded_err_rms"] = r.recorded_err_rms;  // the design's figure; null when none
      j["bytes_sent_per_rank"] = r.bytes_sent_per_rank;
      j["ring_bytes_sent_per_rank"] = r.ring_bytes_sent_per_rank;
      j["workspace_bytes"] = r.workspace_bytes;
      j["seconds"] = r.seconds;
      j["ring_seconds"] = r.ring_seconds;
      j["ring_err"] = r.ring_err;
      j["err_per_rank"] = r.err_per_rank;
      j["accumulate"] = a->accumulate;
      const std::string arith = ModelArithmetic(dtype, accumulation);
      if (design.figures() && design.figures()->predicted_error.count(arith))
        j["predicted_error_model"] = design.figures()->predicted_error.at(arith);
      std::cout << j.dump(2) << "\n";
      return;
    }
    const double d_bytes = double(a->count) * double(SizeOf(dtype));
    std::printf("simulate    %s: N = %d, c = %d, count = %lld, %s%s, seed %llu\n",
                Printable(a->path, 1024).c_str(),
                design.N(), design.c(), a->count, a->dtype.c_str(),
                accumulation == Accumulation::kFloat64           ? " (f64 accumulation)"
                : accumulation == Accumulation::kFloat64Feedback ? " (f64 accumulation, feedback)"
                : accumulation == Accumulation::kFloat64State    ? " (f64 state, feedback)"
                                                                  : "",
                static_cast<unsigned long long>(a->seed));
    char recorded[64] = "none recorded";
    if (design.figures())
      std::snprintf(recorded, sizeof recorded, "%.3e (recorded)", r.recorded_err_rms);
    std::printf("error       measured %.3e   design's err_rms %s   ring %.3e\n",
                r.measured_err_rms, recorded, r.ring_err);
    const std::string arith = ModelArithmetic(dtype, accumulation);
    if (design.figures() && design.figures()->predicted_error.count(arith))
      std::printf("            error model for %s (approximation + rounding): %.3e\n",
                  arith.c_str(), design.figures()->predicted_error.at(arith));
    std::printf("bytes sent  %llu per rank   ring all-reduce %llu   (%.2fx)\n",
                static_cast<unsigned long long>(r.bytes_sent_per_rank),
                static_cast<unsigned long long>(r.ring_bytes_sent_per_rank),
                r.ring_bytes_sent_per_rank ? double(r.bytes_sent_per_rank) /
                                                 double(r.ring_bytes_sent_per_rank)
                                           : 0.0);
    std::printf("workspace   %llu bytes per rank (%.3f d)\n",
                static_cast<unsigned long long>(r.workspace_bytes),
                d_bytes > 0 ? double(r.workspace_bytes) / d_bytes : 0.0);
    std::printf("time        %.4f s   ring all-reduce %.4f s (in-process threads)\n", r.seconds,
                r.ring_seconds);
  });
}

}  // namespace cerar::cli
