// cerar validate FILE: load (which checks format, shapes, finiteness and integrity), re-derive
// every figure the file records — figures of the stored matrices, per rank, predicted errors and
// exact figures — in certified high precision, and compare. Exit 0 only if all agree to the
// digits their certification requires (cerar::design::Validate).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "cerar/design/toolkit.h"
#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "cli_util.h"
#include "commands.h"
#include "cost.h"

namespace cerar::cli {
namespace {

std::string Certification(const Figures& f) {
  if (f.certified_digits.empty()) return Printable(f.precision) + ", not certified";
  std::string text = Printable(f.precision) + ", certified digits";
  for (const auto& [name, digits] : f.certified_digits)
    text += " " + name + " " + std::to_string(digits);
  return text;
}

}  // namespace

void AddValidateCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto precision = std::make_shared<std::string>("mp");
  auto max_digits = std::make_shared<int>(design::kDefaultMaxDigits);
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a design file and re-derive every figure it records in high precision");
  cmd->add_option("file", *path, "design file")->required();
  cmd->add_option("--precision", *precision,
                  "arithmetic of the re-derivation: mp (certified ladder) | auto | float64")
      ->capture_default_str();
  cmd->add_option("--max-digits", *max_digits,
                  "highest working precision of the ladder, in significant digits (>= 50)")
      ->capture_default_str();
  cmd->callback([path, precision, max_digits] {
    Design design = LoadDesign(*path, DesignLoadOptions());
    const std::string shown = Printable(*path, 1024);
    if (!design.figures()) throw DesignError("design file " + shown + ": no figures recorded");
    const design::Precision arithmetic = design::ParsePrecision(*precision);
    CheckCost("validate of N = " + std::to_string(design.N()) + ", c = " +
                  std::to_string(design.c()) + " in " + *precision,
              AnalysisCost(design.N(), design.c(), arithmetic != design::Precision::kFloat64));
    const auto start = std::chrono::steady_clock::now();
    const design::Validation v =
        design::Validate(design, arithmetic, *max_digits);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "file        " << shown << ": format, shapes, values and integrity OK\n";
    std::cout << "recorded    " << Certification(*design.figures()) << "\n";
    std::cout << "re-derived  " << Certification(v.derived) << " (" << Number(seconds) << " s)\n";
    if (v.derived_exact) std::cout << "exact       " << Certification(*v.derived_exact) << "\n";
    std::printf("  %-40s %-14s %-14s %6s %6s\n", "figure", "recorded", "re-derived", "digits",
                "needed");
    std::string differing;
    for (const design::FigureCheck& f : v.checks) {
      std::printf("  %-40s %-14.6e %-14.6e %6d %6d  %s\n", f.name.c_str(), f.recorded, f.derived,
                  f.digits, f.required, f.agree ? "ok" : "DIFFERS");
      if (!f.agree) differing += (differing.empty() ? "" : ", ") + f.name;
    }
    std::fflush(stdout);
    if (!differing.empty())
      throw DesignError("design file " + shown +
                        ": recorded figures differ from re-derived beyond their digits (" +
                        differing + ")");
    std::cout << "valid\n";
  });
}

}  // namespace cerar::cli
