// cerar design: build a design (eps or vandermonde construction at a given eps, or tuned for a
// target arithmetic; or optimised, for a kappa budget or a target arithmetic), analyse it, print
// its report and optionally write the design file.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "cerar/design/optimizer.h"
#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "cerar/runtime/simulate.h"
#include "cli_util.h"
#include "commands.h"
#include "cost.h"
#include "report.h"
#include "watchdog.h"

namespace cerar::cli {
namespace {

struct DesignArgs {
  int N = 8;
  int c = 16;
  std::string construction = "eps";
  double eps = std::nan("");
  std::string tune;
  std::string precision = "auto";
  int max_digits = design::kDefaultMaxDigits;
  std::string output;
  bool force = false;
  bool json = false;
  // --construction optimized (design/include/cerar/design/optimizer.h)
  double kappa_max = design::OptimizeOptions::kNoKappaBound;
  std::string objective;  // default: rms, or predicted with --tune
  double time_limit = 60;
  std::uint64_t seed = 0;
  bool per_rank = false, shift_invariant = false;
  double continuation_from = design::OptimizeOptions::kContinuationAuto;
  int max_evaluations = 200000;
  int lbfgs_memory = design::OptimizeOptions{}.lbfgs_memory;
  long long check_count = 1 << 18;
};

// Options of --construction optimized; their rules are checked by the library (Validate).
design::OptimizeOptions OptimizeOptionsOf(const DesignArgs& a) {
  design::OptimizeOptions o;
  o.N = a.N;
  o.c = a.c;
  o.kappa_max = a.kappa_max;
  if (!a.tune.empty()) {
    o.objective = design::Objective::kPredicted;
    o.target = design::ParseArithmetic(a.tune);
  } else if (!a.objective.empty()) {
    o.objective = design::ParseObjective(a.objective);
  }
  o.time_limit_s = a.time_limit;
  o.seed = a.seed;
  o.variables = a.per_rank          ? design::Variables::kPerRank
                : a.shift_invariant ? design::Variables::kShiftInvariant
                                    : design::Variables::kAuto;
  o.continuation_from = a.continuation_from;
  o.max_evaluations = a.max_evaluations;
  o.lbfgs_memory = a.lbfgs_memory;
  o.max_digits = a.max_digits;
  if (a.precision != "auto") o.precision = design::ParsePrecision(a.precision);  // default mp50
  return o;
}

// A design optimised for a target arithmetic is run before it is written: `cerar simulate`'s
// library call on check_count elements must measure an error within 20 % of the model's
// prediction (docs/optimizer.md §7). The check is recorded in the provenance. No runtime
// arithmetic for bfloat16: recorded as not run.
Design CheckedBySimulation(const Design& d, design::Arithmetic target, long long count) {
  DesignParts parts = d.parts();
  nlohmann::json& check = parts.provenance.parameters["simulation_check"];
  if (target == design::Arithmetic::kBFloat16) {
    check = {{"run", false}, {"why", "the runtime has no bfloat16 arithmetic to simulate"}};
    return Design::Create(std::move(parts), "optimized design");
  }
  SimulateOptions so;
  so.count = std::size_t(count);
  so.dtype = target == design::Arithmetic::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  so.accumulation = target == design::Arithmetic::kFloat32Acc64 ? Accumulation::kFloat64
                    : target == design::Arithmetic::kFloat32Acc64Feedback
                        ? Accumulation::kFloat64Feedback
                    : target == design::Arithmetic::kFloat32State64 ? Accumulation::kFloat64State
                                                                     : Accumulation::kBuffer;
  so.run_ring = false;
  const double measured = Simulate(d, so).measured_err_rms;
  const double predicted = design::PredictedError(*d.figures(), d.N(), d.c(), target);
  const double ratio = measured / predicted;
  if (!(ratio >= 0.8 && ratio <= 1.2)) {
    std::ostringstream m;
    m << "design: simulate --dtype " << ToString(so.dtype) << " --accumulate "
      << ToString(so.accumulation) << " --count " << count
      << " measured error " << measured << ", the error model predicted " << predicted
      << " (ratio " << ratio << ", outside 0.8 .. 1.2); the design was not written";
    throw NumericalError(m.str());
  }
  check = {{"run", true},         {"dtype", ToString(so.dtype)}, {"count", count},
           {"accumulate", ToString(so.accumulation)},
           {"seed", so.seed},     {"measured_error", measured},  {"predicted_error", predicted},
           {"ratio", ratio},      {"rule", "measured within 20 % of predicted"}};
  return Design::Create(std::move(parts), "optimized design");
}

Design BuildOptimized(const DesignArgs& a) {
  design::OptimizeOptions o = OptimizeOptionsOf(a);
  // Progress on stderr, first after 1 s, so short runs stay quiet.
  o.progress = [](const design::OptimizeProgress& p) {
    if (p.worst_constraint > 0)
      std::fprintf(stderr,
                   "optimize: evaluation %d  objective %.4e  worst kappa/kappa_max %.4f  %.1f s\n",
                   p.evaluations, p.objective, p.worst_constraint, p.elapsed_s);
    else  // no kappa bounded (the predicted error prices kappa)
      std::fprintf(stderr, "optimize: evaluation %d  objective %.4e  %.1f s\n", p.evaluations,
                   p.objective, p.elapsed_s);
  };
  Design d = design::Optimize(o);
  if (o.objective == design::Objective::kPredicted)
    d = CheckedBySimulation(d, o.target, a.check_count);
  return d;
}

Design BuildDesign(const DesignArgs& a) {
  if (a.construction == "optimized") return BuildOptimized(a);
  if (a.construction != "eps" && a.construction != "vandermonde")
    throw InvalidArgument("design: --construction '" + a.construction +
                          "' is not one of eps, vandermonde, optimized");
  design::Precision precision = design::ParsePrecision(a.precision);
  design::Construction construction = design::ParseConstruction(a.construction);
  if (!a.tune.empty()) {
    return design::TuneEps(construction, a.N, a.c, design::ParseArithmetic(a.tune), precision,
                           a.max_digits)
        .design;
  }
  design::ConstructionOptions options;
  options.construction = construction;
  options.N = a.N;
  options.c = a.c;
  options.eps = a.eps;
  options.precision = precision;
  options.max_digits = a.max_digits;
  return design::MakeConstruction(options);
}

}  // namespace

void AddDesignCommand(CLI::App& app) {
  auto args = std::make_shared<DesignArgs>();
  CLI::App* cmd = app.add_subcommand("design", "Build a design, print its report, write it (-o)");
  cmd->add_option("-N,--ranks", args->N, "number of ranks N >= 2")->required();
  cmd->add_option("-c,--components", args->c, "components per gradient c >= 1")->required();
  cmd->add_option("--construction", args->construction, "eps | vandermonde | optimized")
      ->capture_default_str();
  // The optimiser's options: refused with another construction rather than silently ignored.
  std::vector<CLI::Option*> optimizer_only;
  auto* kappa_max_opt = cmd->add_option(
      "--kappa-max", args->kappa_max,
      "optimized: bound on kappa_dec and kappa_enc (>= 1; optional with --tune)");
  optimizer_only.push_back(kappa_max_opt);
  auto* objective_opt = cmd->add_option("--objective", args->objective,
                                        "optimized: rms | op (default rms; --tune: predicted)");
  optimizer_only.push_back(objective_opt);
  optimizer_only.push_back(
      cmd->add_option("--time-limit", args->time_limit,
                      "optimized: seconds of search (> 0); the final analysis in --precision "
                      "comes after it (cerar --timeout bounds the whole command)")
          ->capture_default_str());
  optimizer_only.push_back(cmd->add_option("--seed", args->seed, "optimized: seed")
                               ->check(NonNegativeInteger())
                               ->capture_default_str());
  optimizer_only.push_back(cmd->add_option("--max-evaluations", args->max_evaluations,
                                           "optimized: evaluation budget (the reproducible stop)")
                               ->capture_default_str());
  auto* per_rank_opt = cmd->add_flag(
      "--per-rank", args->per_rank,
      "optimized: one encoder per rank (the default where N (c + N - 2) c <= 60000)");
  optimizer_only.push_back(per_rank_opt);
  optimizer_only.push_back(
      cmd->add_flag("--shift-invariant", args->shift_invariant,
                    "optimized: one base sequence C(tau) for all ranks (the default above that)")
          ->excludes(per_rank_opt));
  optimizer_only.push_back(
      cmd->add_option("--check-count", args->check_count,
                      "optimized --tune: elements per rank of the simulation check (>= 1)")
          ->capture_default_str());
  optimizer_only.push_back(cmd->add_option(
      "--continuation-from", args->continuation_from,
      "optimized: first solve for kappa budgets kappa_max/10^s >= this, each rescaled to the "
      "next (0: off; default: 100 where c <= 2N, else off)"));
  optimizer_only.push_back(
      cmd->add_option("--lbfgs-memory", args->lbfgs_memory,
                      "optimized: L-BFGS correction pairs (-1: auto, min(100, max(10, 600000 / "
                      "variables)); 0: NLopt's heuristic)")
          ->capture_default_str());
  auto* eps_opt = cmd->add_option("--eps", args->eps, "construction parameter eps >= 0");
  auto* tune_opt = cmd->add_option(
      "--tune", args->tune,
      "target arithmetic float32 | float64 | bfloat16 | float32+acc64 (float32 packets, float64 "
      "arithmetic: simulate --accumulate f64) | float32+acc64+feedback (and the packets' "
      "rounding fed back: --accumulate f64+feedback) | float32+state64 (and the workspace in "
      "float64: --accumulate f64-state): eps, vandermonde: pick eps for it; "
      "optimized: minimise the predicted error in it");
  eps_opt->excludes(tune_opt);
  cmd->add_option("--precision", args->precision,
                  "arithmetic of decoder derivation and analysis: float64 (refused where it "
                  "cannot be trusted) | mp (certified precision ladder) | auto")
      ->capture_default_str();
  cmd->add_option("--max-digits", args->max_digits,
                  "highest working precision of the ladder, in significant digits (>= 50)")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "design file to write (atomically)");
  cmd->add_flag("--force", args->force, "replace an existing output file");
  cmd->add_flag("--json", args->json, "print the report as one JSON object");
  cmd->callback([args, eps_opt, tune_opt, objective_opt, kappa_max_opt, optimizer_only] {
    const bool optimized = args->construction == "optimized";
    for (const CLI::Option* option : optimizer_only)
      if (!optimized && option->count() > 0)
        throw CliError("design: " + option->get_name() + " is an option of --construction "
                       "optimized, not of " + args->construction);
    if (optimized) {
      // Flag combinations here; every rule on the values is the library's (Validate).
      if (eps_opt->count() > 0)
        throw CliError("design: --construction optimized takes --kappa-max or --tune, not --eps");
      if (kappa_max_opt->count() > 0 && !std::isfinite(args->kappa_max))
        throw InvalidArgument("design: --kappa-max " + Number(args->kappa_max) +
                              ", expected a finite bound >= 1 (leave it out with --tune)");
      if (tune_opt->count() == 0 && std::isinf(args->kappa_max) && args->objective != "predicted")
        throw CliError("design: --construction optimized needs --kappa-max VALUE or --tune "
                       "float32|float64|bfloat16|float32+acc64|float32+acc64+feedback|"
                       "float32+state64");
      if (tune_opt->count() > 0 && objective_opt->count() > 0)
        throw CliError("design: --tune optimises the predicted error; drop --objective " +
                       args->objective);
      if (args->check_count < 1)
        throw CliError("design: --check-count " + std::to_string(args->check_count) +
                       ", expected >= 1");
      const std::string why = OptimizeOptionsOf(*args).Validate();
      if (!why.empty()) throw InvalidArgument("design: " + OptionMessageInFlags(why));
    }
    if (!optimized && eps_opt->count() == 0 && tune_opt->count() == 0)
      throw CliError("design: give --eps VALUE or --tune "
                     "float32|float64|bfloat16|float32+acc64|float32+acc64+feedback|"
                     "float32+state64");
    if (eps_opt->count() > 0 && !(std::isfinite(args->eps) && args->eps >= 0))
      throw InvalidArgument("--eps " + Number(args->eps) +
                            ": eps must be finite and >= 0");
    RequireWritable(args->output, args->force);
    if (WithinDesignLimits(args->N, args->c)) {
      // The final analysis (float64 unless mp50 is asked for: auto goes to mp50 only when
      // float64 cannot be trusted), after a float64 search when tuning; the optimiser's own
      // search is bounded by --time-limit and its final analysis is in mp50.
      const bool mp50 = design::ParsePrecision(args->precision) == design::Precision::kMp50 ||
                        (optimized && args->precision == "auto");
      Cost cost = AnalysisCost(args->N, args->c, mp50);
      if (!args->tune.empty())
        cost.seconds += kTuneAnalyses * AnalysisCost(args->N, args->c, false).seconds;
      if (optimized) cost.seconds *= kOptimizerFinishAnalyses;
      if (!args->output.empty()) cost.bytes += FileWriteBytes(args->N, args->c);
      const std::string what = "design -N " + std::to_string(args->N) + " -c " +
                               std::to_string(args->c) +
                               (optimized ? " after its --time-limit search" : "");
      CheckCost(what, cost);
      if (optimized && cost.seconds > 10 && cost.seconds <= 60) {
        std::cerr << "cerar: note: --time-limit bounds the search; the final analysis in mp50 "
                     "comes after it (about " << Number(cost.seconds) << " s here, "
                     "docs/hardening.md)\n";
      }
    }
    Design design = BuildDesign(*args);
    Watchdog::StandDown();  // the design is complete: write it whole
    // The report first: where standard output cannot take it (a full disk, a closed pipe) the
    // command fails before the file exists, so that exit 2 never leaves a new file behind (a
    // rerun without --force would then refuse to replace it).
    std::cout << (args->json ? ReportJson(design).dump(2) + "\n" : ReportText(design));
    if (!args->output.empty()) {
      FlushStandardOutput();
      SaveDesign(design, args->output, ReplaceMode(args->force));
      if (!args->json) std::cout << "wrote       " << Printable(args->output, 1024) << "\n";
    }
  });
}

}  // namespace cerar::cli
