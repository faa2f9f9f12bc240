#pragma once
// Small helpers shared by the subcommands.
#include <CLI/CLI.hpp>
#include <string>

#include "cerar/format/design_file.h"
#include "cli_checks.h"

namespace cerar::cli {

// RequireWritable and CheckEveryValue: cli_checks.h (shared with the benchmark programs).

// How an output file may be replaced: an existing one only with --force.
inline Replace ReplaceMode(bool force) { return force ? Replace::kRegularFile : Replace::kNever; }

// Prints `text` to stdout, or writes it atomically to `path` when it is not empty.
void Emit(const std::string& text, const std::string& path, bool force);

// Flushes standard output and throws CliError "cannot write to standard output (why)" when it
// could not take what was written (a full disk, a closed pipe). main checks once more at exit.
void FlushStandardOutput();

// A double as the user would write it ("1e-05", "-1", "nan"), for messages.
std::string Number(double value);

// An optimiser or pareto option message (Validate()) in the CLI's words: the library names its
// fields ("time_limit_s = -1"), which a CLI user never typed; this names the flags
// ("--time-limit -1"). One table for `design` and `pareto`, whose options share the names.
std::string OptionMessageInFlags(std::string message);

// CLI11 reads "-1" into an unsigned option as 2^64 - 1: this validator accepts only digits.
const CLI::Validator& NonNegativeInteger();

// Load options from the global --max-file-mib (main.cc sets them before any command runs).
LoadOptions& DesignLoadOptions();

}  // namespace cerar::cli
