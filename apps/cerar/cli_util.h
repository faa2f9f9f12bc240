#pragma once
// Small helpers shared by the subcommands.
#include <string>

namespace cerar::cli {

// Fails early (before any long computation) when `path` cannot be written: its folder must exist
// and be writable. The write itself is atomic (WriteFileAtomically / SaveDesign).
void RequireWritable(const std::string& path);

// Prints `text` to stdout, or writes it atomically to `path` when it is not empty.
void Emit(const std::string& text, const std::string& path);

}  // namespace cerar::cli

namespace cerar::cli {

// A double as the user would write it ("1e-05", "-1", "nan"), for messages.
std::string Number(double value);

}  // namespace cerar::cli
