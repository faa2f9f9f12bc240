// cerar report FILE [--json]: the figures recorded in a design file.
#include <iostream>

#include "cerar/errors.h"
#include "cerar/format/design_file.h"
#include "cerar/format/printable.h"
#include "cli_util.h"
#include "commands.h"
#include "report.h"

namespace cerar::cli {

void AddReportCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("report", "Print a design file's figures");
  cmd->add_option("file", *path, "design file")->required();
  cmd->add_flag("--json", *json, "one JSON object (figures under the names of PROTOCOL.md §5)");
  cmd->callback([path, json] {
    Design design = LoadDesign(*path, DesignLoadOptions());
    if (!design.figures())
      throw DesignError("design file " + Printable(*path, 1024) +
                        ": no figures recorded; report prints a file's recorded, certified "
                        "figures (`cerar design` writes them)");
    std::cout << (*json ? ReportJson(design).dump(2) + "\n" : ReportText(design));
  });
}

}  // namespace cerar::cli
