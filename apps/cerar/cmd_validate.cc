// cerar validate FILE: load (which checks format, shapes, finiteness and integrity), re-derive the
// figures in high precision and compare them with those recorded. Exit 0 only if both hold.
#include <cstdio>
#include <iostream>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"
#include "cerar/format/printable.h"
#include "cli_util.h"
#include "commands.h"
#include "cost.h"

namespace cerar::cli {

void AddValidateCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto precision = std::make_shared<std::string>("mp50");
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a design file and re-derive its figures in high precision");
  cmd->add_option("file", *path, "design file")->required();
  cmd->add_option("--precision", *precision, "arithmetic of the re-derivation: mp50 | float64")
      ->capture_default_str();
  cmd->callback([path, precision] {
    Design design = LoadDesign(*path, DesignLoadOptions());
    const std::string shown = Printable(*path, 1024);
    if (!design.figures()) throw DesignError("design file " + shown + ": no figures recorded");
    const Figures& recorded = *design.figures();
    const design::Precision arithmetic = design::ParsePrecision(*precision);
    CheckCost("validate of N = " + std::to_string(design.N()) + ", c = " +
                  std::to_string(design.c()) + " in " + *precision,
              AnalysisCost(design.N(), design.c(), arithmetic != design::Precision::kFloat64));
    const Figures derived = design::Analyse(design, arithmetic);
    std::cout << "file        " << shown << ": format, shapes, values and integrity OK\n";
    std::cout << "figures     recorded (" << Printable(recorded.precision)
              << ")  vs  re-derived ("
              << derived.precision << ")\n";
    std::string differing;
    for (const design::FigureCheck& f : design::CompareFigures(recorded, derived)) {
      std::printf("  %-9s %.6e  vs  %.6e  %s\n", f.name.c_str(), f.recorded, f.derived,
                  f.agree ? "ok" : "DIFFERS");
      if (!f.agree) differing += (differing.empty() ? "" : ", ") + f.name;
    }
    std::fflush(stdout);
    if (!differing.empty())
      throw DesignError("design file " + shown + ": recorded figures differ from re-derived (" +
                        differing + ")");
    std::cout << "valid\n";
  });
}

}  // namespace cerar::cli
