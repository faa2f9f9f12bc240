#include "report.h"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cerar/format/design_parts.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"

namespace cerar::cli {
namespace {

std::string Sci(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  return buf;
}

std::string Fixed(double v, int decimals = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "mp200; certified digits: err_op 15, err_rms 15, kappa_dec 12, kappa_enc 15" or, for figures
// the precision ladder did not certify, what they rest on (docs/error-model.md).
std::string PrecisionText(const Figures& f) {
  if (f.certified_digits.empty()) {
    return Printable(f.precision) + (f.precision == "float64"
                              ? "; not certified: trusted by the conditioning rule, "
                                "`cerar validate` certifies them"
                              : "; not certified");
  }
  std::string text = Printable(f.precision) + "; certified digits:";
  const char* sep = " ";
  for (const char* name : {"err_op", "err_rms", "kappa_dec", "kappa_enc"}) {
    const auto it = f.certified_digits.find(name);
    if (it == f.certified_digits.end()) continue;
    text += sep + std::string(name) + " " + std::to_string(it->second);
    sep = ", ";
  }
  return text;
}

const Figures& RequireFigures(const Design& design) {
  if (!design.figures()) throw DesignError("design has no recorded figures");
  return *design.figures();
}

// What makes the recorded figures say "unusable": a worst-case error above the other ranks'
// gradients themselves (e.g. matrices that rounding to float64 destroyed, beside exact figures
// that look fine), or a predicted error of 1 or more in an arithmetic (the result is noise).
std::vector<std::string> Warnings(const Figures& f) {
  std::vector<std::string> warnings;
  if (!(f.err_op <= 1)) {
    warnings.push_back("err_op " + Sci(f.err_op) +
                       " > 1: for some inputs the error is larger than the other ranks' "
                       "gradients themselves; these matrices are unusable");
  }
  std::string noise;
  for (const auto& [arithmetic, err] : f.predicted_error) {
    if (!(err < 1)) noise += (noise.empty() ? "" : ", ") + arithmetic + " " + Sci(err);
  }
  if (!noise.empty()) {
    warnings.push_back("predicted error >= 1 in " + noise +
                       ": a run in that arithmetic returns noise; use another arithmetic or a "
                       "better-conditioned design");
  }
  return warnings;
}

}  // namespace

nlohmann::json FiguresJson(const Figures& f) {
  const auto each = [](const std::vector<double>& values) {
    nlohmann::json a = nlohmann::json::array();
    for (const double v : values) a.push_back(FigureJson(v));
    return a;
  };
  nlohmann::json j;
  j["err_op"] = FigureJson(f.err_op);
  j["err_rms"] = FigureJson(f.err_rms);
  j["kappa_dec"] = FigureJson(f.kappa_dec);
  j["kappa_enc"] = FigureJson(f.kappa_enc);
  j["precision"] = f.precision;
  j["per_rank"] = {{"err_op", each(f.err_op_per_rank)},
                   {"err_rms", each(f.err_rms_per_rank)},
                   {"kappa_dec", each(f.kappa_dec_per_rank)},
                   {"kappa_enc", each(f.kappa_enc_per_rank)}};
  j["predicted_error"] = nlohmann::json::object();
  for (const auto& [arithmetic, value] : f.predicted_error)
    j["predicted_error"][arithmetic] = FigureJson(value);
  j["certified_digits"] = f.certified_digits;  // {} when not certified
  j["warnings"] = Warnings(f);                   // [] when none
  return j;
}

nlohmann::json ReportJson(const Design& design) {
  const Figures& f = RequireFigures(design);
  nlohmann::json j = FiguresJson(f);
  j["N"] = design.N();
  j["c"] = design.c();
  j["L"] = design.L();
  j["traffic_rate"] = design.traffic_rate();
  j["workspace_rate"] = design.workspace_rate();
  j["ring_traffic_rate"] = design.ring_traffic_rate();
  j["construction"] = design.provenance().construction;
  j["parameters"] = design.provenance().parameters;
  if (design.exact_figures()) j["exact_figures"] = FiguresJson(*design.exact_figures());
  j["notes"] = design.notes();
  return j;
}

std::string ReportText(const Design& design) {
  const Figures& f = RequireFigures(design);
  std::ostringstream out;
  const auto& prov = design.provenance();
  // Text from the file is escaped: a signed file may still carry terminal escape sequences.
  out << "design      " << Printable(prov.construction);
  if (prov.parameters.contains("eps") && prov.parameters["eps"].is_number()) {
    out << "  eps = " << Sci(prov.parameters["eps"].get<double>());
  }
  out << "  (N = " << design.N() << ", c = " << design.c() << ")\n";
  out << "rounds      L = c + N - 2 = " << design.L() << "\n";
  out << "traffic     " << Fixed(design.traffic_rate()) << " d per rank (ring all-reduce "
      << Fixed(design.ring_traffic_rate()) << " d: " << Fixed(design.traffic_rate() /
                                                                design.ring_traffic_rate(), 2)
      << "x)\n";
  out << "workspace   " << Fixed(design.workspace_rate()) << " d per rank\n";
  out << "figures     (" << PrecisionText(f) << ")\n";
  out << "  err_op    " << Sci(f.err_op) << "   worst-case relative bound\n";
  out << "  err_rms   " << Sci(f.err_rms) << "   expected relative error, iid inputs\n";
  out << "  kappa_dec " << Sci(f.kappa_dec) << "\n";
  out << "  kappa_enc " << Sci(f.kappa_enc) << "\n";
  for (const auto& [arith, err] : f.predicted_error)
    out << "  predicted error in " << Printable(arith) << ": " << Sci(err) << "\n";
  for (const std::string& warning : Warnings(f))
    out << "warning     " << Printable(warning, 4096) << "\n";
  if (design.exact_figures()) {
    const Figures& e = *design.exact_figures();
    out << "exact construction (before rounding to float64; " << PrecisionText(e) << ")\n"
        << "            err_op "
        << Sci(e.err_op) << ", err_rms " << Sci(e.err_rms) << ", kappa_dec " << Sci(e.kappa_dec)
        << ", kappa_enc " << Sci(e.kappa_enc) << "\n";
  }
  if (!f.err_op_per_rank.empty()) {
    out << "per rank    rank  err_op     err_rms    kappa_dec  kappa_enc\n";
    for (int r = 0; r < design.N(); ++r) {
      auto at = [&](const std::vector<double>& v) { return r < int(v.size()) ? Sci(v[r]) : "-"; };
      char line[160];
      std::snprintf(line, sizeof line, "            %4d  %-9s  %-9s  %-9s  %-9s\n", r,
                    at(f.err_op_per_rank).c_str(), at(f.err_rms_per_rank).c_str(),
                    at(f.kappa_dec_per_rank).c_str(), at(f.kappa_enc_per_rank).c_str());
      out << line;
    }
  }
  for (const auto& note : design.notes()) {
    out << "note        " << Printable(note, 4096) << "\n";
  }
  return out.str();
}

}  // namespace cerar::cli
