#pragma once
// The parts of a Design that carry free-form JSON: its Provenance and the DesignParts aggregate
// that builds one (Design::Create). Kept apart from design.h so that users of the runtime, who
// only execute designs, never compile nlohmann/json; the toolkit, the file reader and anyone who
// builds a design or reads provenance parameters include this header (and link
// nlohmann_json::nlohmann_json, which cerar::design carries for them).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cerar/format/design.h"

namespace cerar {

// How a design was made: construction name ("eps", "vandermonde", "optimized", "random",
// "custom"), its parameters (eps, kappa_max, seed, optimiser settings, start point, ...).
struct Provenance {
  std::string construction = "custom";
  bool shift_invariant = false;
  nlohmann::json parameters = nlohmann::json::object();
};

// A figure as design files (and `cerar report --json`) write it: the number, or the string
// "inf" for +inf (a singular matrix's condition number), since JSON has no infinity and
// nlohmann would write null.
nlohmann::json FigureJson(double value);

// Everything a Design holds, as a plain mutable aggregate for building one.
struct DesignParts {
  int N = 0;
  int c = 0;
  std::vector<MatrixXd> encoders;  // N matrices, each L x c
  std::vector<MatrixXd> decoders;  // N matrices, each c x c
  Provenance provenance;
  std::optional<Figures> figures;        // of the matrices as stored
  std::optional<Figures> exact_figures;  // of the exact (unrounded) construction, when they differ
  std::vector<std::string> notes;        // e.g. "rounding to float64 moves err_op by 3e-5"
};

}  // namespace cerar
