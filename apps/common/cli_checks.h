#pragma once
// Command-line helpers shared by the programs: the cerar CLI and the benchmark programs.
#include <CLI/CLI.hpp>
#include <string>

namespace cerar::cli {

// Every option that takes a value refuses an empty one (CLI11 would read --eps "" as 0), and every
// integer is decimal and in its type's range (CLI11 reads "010" as 8 and clamps 2^70).
void CheckEveryValue(CLI::App& app);

// Parses the command line of a program without subcommands. Returns -1 to go on; 0 after
// printing --help; 2 after printing a parse error as one line on stderr,
// "<app name>: <message> (see <app name> --help)".
int ParseArguments(CLI::App& app, int argc, char** argv);

// Fails early (before any long computation) when `path` cannot be written: its folder must exist
// and be writable, and only a regular, writable file may be there, replaced only with `force`
// (--force). The write itself is atomic (WriteFileAtomically / SaveDesign) and checks again.
void RequireWritable(const std::string& path, bool force);

}  // namespace cerar::cli
