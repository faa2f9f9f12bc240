// cerar validate FILE: load (which checks format, shapes, finiteness and integrity), re-derive the
// figures in high precision and compare them with those recorded. Exit 0 only if both hold.
#include <cmath>
#include <iostream>
#include <sstream>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"
#include "commands.h"

namespace cerar::cli {
namespace {

// Error figures are relative errors: they agree when within 1e-6 relative or 1e-12 absolute
// (the absolute floor covers exact designs whose error is rounding noise ~1e-16). Condition
// numbers agree within 1e-6 relative.
bool Agree(double recorded, double derived, double abs_floor) {
  if (!std::isfinite(recorded) || !std::isfinite(derived)) return false;
  return std::abs(recorded - derived) <= 1e-6 * std::max(std::abs(recorded), std::abs(derived)) +
                                             abs_floor;
}

}  // namespace

void AddValidateCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto precision = std::make_shared<std::string>("mp50");
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a design file and re-derive its figures in high precision");
  cmd->add_option("file", *path, "design file")->required();
  cmd->add_option("--precision", *precision, "arithmetic of the re-derivation: mp50 | float64")
      ->capture_default_str();
  cmd->callback([path, precision] {
    Design design = LoadDesign(*path);
    if (!design.figures()) throw DesignError("design file " + *path + ": no figures recorded");
    const Figures& rec = *design.figures();
    Figures got = design::Analyse(design, design::ParsePrecision(*precision));
    struct Row {
      const char* name;
      double recorded, derived, floor;
    };
    const Row rows[] = {{"err_op", rec.err_op, got.err_op, 1e-12},
                        {"err_rms", rec.err_rms, got.err_rms, 1e-12},
                        {"kappa_dec", rec.kappa_dec, got.kappa_dec, 0},
                        {"kappa_enc", rec.kappa_enc, got.kappa_enc, 0}};
    std::cout << "file        " << *path << ": format, shapes, values and integrity OK\n";
    std::cout << "figures     recorded (" << rec.precision << ")  vs  re-derived (" << got.precision
              << ")\n";
    std::ostringstream bad;
    for (const Row& r : rows) {
      const bool ok = Agree(r.recorded, r.derived, r.floor);
      char line[200];
      std::snprintf(line, sizeof line, "  %-9s %.6e  vs  %.6e  %s\n", r.name, r.recorded,
                    r.derived, ok ? "ok" : "DIFFERS");
      std::cout << line;
      if (!ok) bad << (bad.tellp() > 0 ? ", " : "") << r.name;
    }
    if (bad.tellp() > 0)
      throw DesignError("design file " + *path + ": recorded figures differ from re-derived (" +
                        bad.str() + ")");
    std::cout << "valid\n";
  });
}

}  // namespace cerar::cli
