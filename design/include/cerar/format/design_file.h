#pragma once
// Design files (docs/design-format.md): versioned JSON that Python reads with its standard
// library; float64 values round-trip bit-exactly; an integrity value (SHA-256) detects a
// corrupted or edited file.
#include <string>

#include "cerar/format/design.h"

namespace cerar {

// Version 2 adds figures.certified_digits (certified high-precision figures). Writers write
// version 1 whenever a file does not use it, so files without certified figures stay readable
// by version-1 readers; readers accept both.
inline constexpr int kDesignFormatVersion = 2;
inline constexpr int kOldestDesignFormatVersion = 1;

// Loads and validates a design file. Every failure throws (IoError for unreadable files,
// DesignError for anything else) with one line naming the file and what is wrong. Nothing
// half-loaded is ever returned.
Design LoadDesign(const std::string& path);

// Parses a design from a JSON text; `source` names it in messages.
Design ParseDesign(const std::string& text, const std::string& source);

// Serialises a design (with its integrity value) to JSON text.
std::string SerializeDesign(const Design& design);

// Writes atomically: a temporary file in the same folder, fsync, rename. On any failure the
// target is untouched and no temporary is left behind; throws IoError naming the path.
void SaveDesign(const Design& design, const std::string& path);

// Same atomic write for any text (reports, CSV) so no command ever leaves a partial file.
void WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace cerar
