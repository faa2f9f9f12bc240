// cerar pareto: error-vs-kappa fronts of the eps construction (eps chosen so kappa_dec meets
// each kappa) and of optimised designs (docs/optimizer.md), as a table or CSV.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cerar/design/optimizer.h"
#include "cerar/errors.h"
#include "cli_util.h"
#include "cost.h"
#include "commands.h"

namespace cerar::cli {
namespace {

struct ParetoArgs {
  int N = 8, c = 16;
  std::string kappa = "1e1:1e6";
  int points = 6;
  std::string objective = "rms";
  double time_limit = 60;
  int max_evaluations = 200000;
  std::uint64_t seed = 0;
  std::string precision = "mp50";
  bool no_optimize = false;
  bool per_rank = false, shift_invariant = false;
  double continuation_from = design::OptimizeOptions::kContinuationAuto;
  bool csv = false;
  std::string output;
  bool force = false;
};

// "FROM:TO" or a single value.
std::pair<double, double> ParseKappaRange(const std::string& text) {
  const auto colon = text.find(':');
  try {
    std::size_t used = 0;
    const std::string a = text.substr(0, colon),
                      b = colon == std::string::npos ? a : text.substr(colon + 1);
    const double from = std::stod(a, &used);
    if (used != a.size()) throw std::invalid_argument(a);
    const double to = std::stod(b, &used);
    if (used != b.size()) throw std::invalid_argument(b);
    return {from, to};
  } catch (const std::logic_error&) {
    throw InvalidArgument("pareto: --kappa \"" + text + "\" is not FROM:TO (e.g. 1e1:1e6)");
  }
}

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace

void AddParetoCommand(CLI::App& app) {
  auto a = std::make_shared<ParetoArgs>();
  CLI::App* cmd =
      app.add_subcommand("pareto", "Error vs kappa fronts: eps construction and optimised");
  cmd->add_option("-N,--ranks", a->N, "number of ranks N >= 2")->required();
  cmd->add_option("-c,--components", a->c, "components c >= 1")->required();
  cmd->add_option("--kappa", a->kappa, "kappa budgets FROM:TO (log-spaced), or one value")
      ->capture_default_str();
  cmd->add_option("--points", a->points, "number of budgets (>= 1)")->capture_default_str();
  cmd->add_option("--objective", a->objective, "rms | op")->capture_default_str();
  cmd->add_option("--time-limit", a->time_limit, "seconds per optimised point (> 0)")
      ->capture_default_str();
  cmd->add_option("--max-evaluations", a->max_evaluations, "evaluations per optimised point")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "optimiser seed")
      ->check(NonNegativeInteger())
      ->capture_default_str();
  cmd->add_option("--precision", a->precision, "analysis precision: mp50 (or mp) | float64")
      ->capture_default_str();
  cmd->add_flag("--no-optimize", a->no_optimize, "eps front only");
  cmd->add_option("--continuation-from", a->continuation_from,
                  "first solve for kappa budgets kappa/10^s >= this, each rescaled to the next "
                  "(0: off; default: 100 where c <= 2N, else off)");
  auto* per_rank_opt = cmd->add_flag(
      "--per-rank", a->per_rank, "optimise one encoder per rank (default where N (c + N - 2) c <= 60000)");
  cmd->add_flag("--shift-invariant", a->shift_invariant,
                "optimise one base sequence C(tau) for all ranks (the default above that)")
      ->excludes(per_rank_opt);
  cmd->add_flag("--csv", a->csv, "CSV instead of a table");
  cmd->add_option("-o,--output", a->output, "write to this file (atomically) instead of stdout");
  cmd->add_flag("--force", a->force, "replace an existing output file");
  cmd->callback([a] {
    auto [from, to] = ParseKappaRange(a->kappa);
    design::ParetoOptions po;
    po.N = a->N;
    po.c = a->c;
    po.kappa_from = from;
    po.kappa_to = to;
    po.points = from == to ? 1 : a->points;  // one budget: one point
    po.optimize = !a->no_optimize;
    po.objective = design::ParseObjective(a->objective);
    po.variables = a->per_rank          ? design::Variables::kPerRank
                   : a->shift_invariant ? design::Variables::kShiftInvariant
                                        : design::Variables::kAuto;
    po.continuation_from = a->continuation_from;
    po.time_limit_s = a->time_limit;
    po.max_evaluations = a->max_evaluations;
    po.seed = a->seed;
    po.precision = design::ParsePrecision(a->precision);
    // Every rule on the values is the library's.
    if (const std::string why = po.Validate(); !why.empty())
      throw InvalidArgument(OptionMessageInFlags(why));
    RequireWritable(a->output, a->force);
    if (WithinDesignLimits(a->N, a->c)) {
      // Per budget: the eps scan (as --tune's search), the eps design and its figures in
      // --precision, and when optimising the --time-limit search, its mp50 finish and figures.
      const bool mp50 = po.precision == design::Precision::kMp50;
      Cost cost = AnalysisCost(a->N, a->c, mp50);
      double per_point = kTuneAnalyses * AnalysisCost(a->N, a->c, false).seconds + 2 * cost.seconds;
      if (po.optimize) {
        per_point += po.time_limit_s + (kOptimizerFinishAnalyses + 1) *
                                           AnalysisCost(a->N, a->c, true).seconds;
        cost.bytes = std::max(cost.bytes, AnalysisCost(a->N, a->c, true).bytes);
      }
      cost.seconds = po.points * per_point;
      CheckCost("pareto of " + std::to_string(po.points) + " budgets at N = " +
                    std::to_string(a->N) + ", c = " + std::to_string(a->c),
                cost);
    }
    po.progress = [](const design::OptimizeProgress& p) {
      std::fprintf(stderr,
                   "pareto: evaluation %d  objective %.4e  worst kappa/kappa_max %.4f  %.1f s\n",
                   p.evaluations, p.objective, p.worst_constraint, p.elapsed_s);
    };
    const auto front = design::ParetoFront(po);
    // A front without a single design is a failure, not a table of gaps.
    bool any = false;
    for (const auto& p : front) any = any || p.has_eps || p.has_optimized;
    if (!any) {
      std::ostringstream m;
      m << "pareto: no design meets any kappa budget in " << a->kappa << " for N = " << a->N
        << ", c = " << a->c;
      if (!front.empty() && !front.back().infeasible.empty())
        m << " (largest budget: " << front.back().infeasible << ")";
      throw NumericalError(m.str());
    }
    std::ostringstream out;
    char line[400];
    if (a->csv) {
      out << "N,c,kappa,eps,eps_err_rms,eps_err_op,eps_kappa_dec,eps_kappa_enc,opt_err_rms,"
             "opt_err_op,opt_kappa_dec,opt_kappa_enc,improved,ratio_err_rms,seconds,precision\n";
    } else {
      std::snprintf(line, sizeof line, "%-9s %-10s %-11s %-11s %-11s %-11s %-11s %-8s %-7s\n",
                    "kappa", "eps", "eps_rms", "eps_kdec", "opt_rms", "opt_kdec", "opt_kenc",
                    "ratio", "secs");
      out << line;
    }
    // A figure the run did not compute (--no-optimize, or no eps design within a budget) is an
    // empty CSV cell and "-" in the table, never a "nan" that reads like a failed computation.
    auto cell = [&](bool has, double v, const char* table_format) -> std::string {
      if (!has) return a->csv ? "" : "-";
      if (a->csv) return Num(v);
      char text[40];
      std::snprintf(text, sizeof text, table_format, v);
      return text;
    };
    for (const auto& p : front) {
      const Figures& e = p.eps_figures;
      const Figures& o = p.optimized_figures;
      const bool both = p.has_eps && p.has_optimized;
      const std::string ratio = cell(both, both ? o.err_rms / e.err_rms : 0, "%.3f");
      if (a->csv) {
        out << a->N << ',' << a->c << ',' << Num(p.kappa) << ',' << cell(p.has_eps, p.eps, "")
            << ',' << cell(p.has_eps, e.err_rms, "") << ',' << cell(p.has_eps, e.err_op, "")
            << ',' << cell(p.has_eps, e.kappa_dec, "") << ',' << cell(p.has_eps, e.kappa_enc, "")
            << ',' << cell(p.has_optimized, o.err_rms, "") << ','
            << cell(p.has_optimized, o.err_op, "") << ',' << cell(p.has_optimized, o.kappa_dec, "")
            << ',' << cell(p.has_optimized, o.kappa_enc, "") << ','
            << (p.has_optimized ? (p.improved ? "1" : "0") : "") << ',' << ratio << ','
            << Num(p.seconds) << ',' << a->precision << '\n';
      } else {
        std::snprintf(line, sizeof line, "%-9.3g %-10s %-11s %-11s %-11s %-11s %-11s %-8s %-7.1f\n",
                      p.kappa, cell(p.has_eps, p.eps, "%.3e").c_str(),
                      cell(p.has_eps, e.err_rms, "%.4e").c_str(),
                      cell(p.has_eps, e.kappa_dec, "%.4e").c_str(),
                      cell(p.has_optimized, o.err_rms, "%.4e").c_str(),
                      cell(p.has_optimized, o.kappa_dec, "%.4e").c_str(),
                      cell(p.has_optimized, o.kappa_enc, "%.4e").c_str(), ratio.c_str(), p.seconds);
        out << line;
      }
    }
    Emit(out.str(), a->output, a->force);
  });
}

}  // namespace cerar::cli
