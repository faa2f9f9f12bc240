#pragma once
// Presentation of a design's figures: a human table and one JSON object whose top level carries
// the figures under the names of PROTOCOL.md §5.
#include <nlohmann/json.hpp>
#include <string>

#include "cerar/format/design.h"

namespace cerar::cli {

nlohmann::json FiguresJson(const Figures& figures);
nlohmann::json ReportJson(const Design& design);
std::string ReportText(const Design& design);

}  // namespace cerar::cli
