// cerar sweep: figures over a log-spaced eps grid, as a table or CSV (for the notebooks).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cerar/design/toolkit.h"
#include "cerar/errors.h"
#include "cli_util.h"
#include "commands.h"
#include "cost.h"

namespace cerar::cli {
namespace {

struct SweepArgs {
  int N = 8, c = 16;
  std::string construction = "eps";
  double eps_from = 1e-6, eps_to = 1e-1;
  int points = 11;
  std::string precision = "auto";
  int max_digits = design::kDefaultMaxDigits;
  bool csv = false;
  std::string output;
  bool force = false;
};

double Predicted(const Figures& f, const std::string& arith) {
  auto it = f.predicted_error.find(arith);
  return it == f.predicted_error.end() ? std::nan("") : it->second;
}

}  // namespace

void AddSweepCommand(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Figures of a construction over an eps grid");
  cmd->add_option("-N,--ranks", a->N, "number of ranks N >= 2")->required();
  cmd->add_option("-c,--components", a->c, "components c >= 1")->required();
  cmd->add_option("--construction", a->construction, "eps | vandermonde")->capture_default_str();
  cmd->add_option("--eps-from", a->eps_from, "smallest eps (> 0)")->capture_default_str();
  cmd->add_option("--eps-to", a->eps_to, "largest eps (>= eps-from)")->capture_default_str();
  cmd->add_option("--points", a->points, "grid points (>= 1)")->capture_default_str();
  cmd->add_option("--precision", a->precision, "float64 | mp | auto")->capture_default_str();
  cmd->add_option("--max-digits", a->max_digits, "top of the precision ladder (>= 50)")
      ->capture_default_str();
  cmd->add_flag("--csv", a->csv, "CSV instead of a table");
  cmd->add_option("-o,--output", a->output, "write to this file (atomically) instead of stdout");
  cmd->add_flag("--force", a->force, "replace an existing output file");
  cmd->callback([a] {
    if (!(std::isfinite(a->eps_from) && a->eps_from > 0 && std::isfinite(a->eps_to) &&
          a->eps_to >= a->eps_from))
      throw InvalidArgument("sweep: need 0 < --eps-from <= --eps-to, finite; got " +
                            Number(a->eps_from) + " and " + Number(a->eps_to));
    if (a->points < 1 || a->points > 10000)
      throw InvalidArgument("sweep: --points " + std::to_string(a->points) +
                            " must be in [1, 10000]");
    RequireWritable(a->output, a->force);
    if (WithinDesignLimits(a->N, a->c)) {
      Cost cost = AnalysisCost(a->N, a->c, a->precision == "mp50");
      cost.seconds *= a->points;
      CheckCost("sweep of " + std::to_string(a->points) + " designs at N = " +
                    std::to_string(a->N) + ", c = " + std::to_string(a->c),
                cost);
    }
    auto sweep = design::Sweep(design::ParseConstruction(a->construction), a->N, a->c,
                               a->eps_from, a->eps_to, a->points,
                               design::ParsePrecision(a->precision), a->max_digits);
    std::ostringstream out;
    char line[320];
    if (a->csv) {
      out << "construction,N,c,eps,err_op,err_rms,kappa_dec,kappa_enc,predicted_float32,"
             "predicted_float64,precision\n";
    } else {
      std::snprintf(line, sizeof line, "%-10s %-10s %-10s %-10s %-10s %-10s %-10s %s\n", "eps",
                    "err_op", "err_rms", "kappa_dec", "kappa_enc", "pred_f32", "pred_f64",
                    "precision");
      out << line;
    }
    for (const auto& p : sweep) {
      const Figures& f = p.figures;
      if (a->csv) {
        std::snprintf(line, sizeof line, "%s,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%s\n",
                      a->construction.c_str(), a->N, a->c, p.eps, f.err_op, f.err_rms, f.kappa_dec,
                      f.kappa_enc, Predicted(f, "float32"), Predicted(f, "float64"),
                      f.precision.c_str());
      } else {
        std::snprintf(line, sizeof line,
                      "%-10.3e %-10.3e %-10.3e %-10.3e %-10.3e %-10.3e %-10.3e %s\n", p.eps,
                      f.err_op, f.err_rms, f.kappa_dec, f.kappa_enc, Predicted(f, "float32"),
                      Predicted(f, "float64"), f.precision.c_str());
      }
      out << line;
    }
    Emit(out.str(), a->output, a->force);
  });
}

}  // namespace cerar::cli
