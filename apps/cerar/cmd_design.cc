// cerar design: build a design (eps or vandermonde construction at a given eps, or tuned for a
// target arithmetic), analyse it, print its report and optionally write the design file.
#include <cmath>
#include <iostream>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"
#include "cli_util.h"
#include "commands.h"
#include "report.h"

namespace cerar::cli {
namespace {

struct DesignArgs {
  int N = 8;
  int c = 16;
  std::string construction = "eps";
  double eps = std::nan("");
  std::string tune;
  std::string precision = "auto";
  std::string output;
  bool json = false;
};

Design BuildDesign(const DesignArgs& a) {
  design::Precision precision = design::ParsePrecision(a.precision);
  design::Construction construction = design::ParseConstruction(a.construction);
  if (!a.tune.empty()) {
    return design::TuneEps(construction, a.N, a.c, design::ParseArithmetic(a.tune), precision)
        .design;
  }
  design::ConstructionOptions options;
  options.construction = construction;
  options.N = a.N;
  options.c = a.c;
  options.eps = a.eps;
  options.precision = precision;
  return design::MakeConstruction(options);
}

}  // namespace

void AddDesignCommand(CLI::App& app) {
  auto args = std::make_shared<DesignArgs>();
  CLI::App* cmd = app.add_subcommand("design", "Build a design, print its report, write it (-o)");
  cmd->add_option("-N,--ranks", args->N, "number of ranks N >= 2")->required();
  cmd->add_option("-c,--components", args->c, "components per gradient c >= 1")->required();
  cmd->add_option("--construction", args->construction, "eps | vandermonde")
      ->capture_default_str();
  auto* eps_opt = cmd->add_option("--eps", args->eps, "construction parameter eps >= 0");
  auto* tune_opt = cmd->add_option("--tune", args->tune,
                                   "pick eps for a target arithmetic: float32 | float64 | bfloat16");
  eps_opt->excludes(tune_opt);
  cmd->add_option("--precision", args->precision,
                  "arithmetic of decoder derivation and analysis: float64 | mp50 | auto")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "design file to write (atomically)");
  cmd->add_flag("--json", args->json, "print the report as one JSON object");
  cmd->callback([args, eps_opt, tune_opt] {
    if (eps_opt->count() == 0 && tune_opt->count() == 0)
      throw CliError("design: give --eps VALUE or --tune float32|float64|bfloat16");
    if (eps_opt->count() > 0 && !(std::isfinite(args->eps) && args->eps >= 0))
      throw InvalidArgument("--eps " + std::to_string(args->eps) +
                            ": eps must be finite and >= 0");
    RequireWritable(args->output);
    Design design = BuildDesign(*args);
    if (!args->output.empty()) SaveDesign(design, args->output);
    std::cout << (args->json ? ReportJson(design).dump(2) + "\n" : ReportText(design));
    if (!args->output.empty() && !args->json) std::cout << "wrote       " << args->output << "\n";
  });
}

}  // namespace cerar::cli
