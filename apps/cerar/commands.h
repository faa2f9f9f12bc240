#pragma once
// One function per `cerar` subcommand; each adds itself to the app with its options and action.
// Actions throw cerar::Error (or CliError) on failure; main() turns any of them into one line on
// stderr and exit code 2.
#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

namespace cerar::cli {

// A user error found by the CLI itself (bad combination of options).
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void AddDesignCommand(CLI::App& app);
void AddValidateCommand(CLI::App& app);
void AddReportCommand(CLI::App& app);
void AddSweepCommand(CLI::App& app);
void AddSimulateCommand(CLI::App& app);
void AddParetoCommand(CLI::App& app);  // cmd_pareto.cc (optimiser)

}  // namespace cerar::cli
