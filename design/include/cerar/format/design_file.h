#pragma once
// Design files (docs/design-format.md): versioned JSON that Python reads with its standard
// library; float64 values round-trip bit-exactly; an integrity value (SHA-256) detects a
// corrupted or edited file.
#include <cstdint>
#include <string>

#include "cerar/format/design.h"

namespace cerar {

// Version 2 adds figures.certified_digits (certified high-precision figures). Writers write
// version 1 whenever a file does not use it, so files without certified figures stay readable
// by version-1 readers; readers accept both.
inline constexpr int kDesignFormatVersion = 2;
inline constexpr int kOldestDesignFormatVersion = 1;

// Design files larger than this are refused before they are read (docs/design-format.md,
// "Limits"): 64 MiB holds designs up to about N = 64, c = 128 (the catalogue's largest file is
// 12 MB). Larger designs need LoadOptions::max_file_bytes (`cerar ... --max-file-mib`).
inline constexpr std::uint64_t kDefaultMaxDesignFileBytes = std::uint64_t{64} << 20;

struct LoadOptions {
  std::uint64_t max_file_bytes = kDefaultMaxDesignFileBytes;
};

// Loads and validates a design file. Every failure throws (IoError for unreadable files,
// DesignError for anything else) with one line naming the file and what is wrong. Nothing
// half-loaded is ever returned. The file is parsed as it is read, within the bounds of
// docs/design-format.md ("Limits"), so a hostile file is rejected early and in bounded memory.
Design LoadDesign(const std::string& path, const LoadOptions& options = {});

// Parses a design from a JSON text; `source` names it in messages.
Design ParseDesign(const std::string& text, const std::string& source);

// Serialises a design (with its integrity value) to JSON text.
std::string SerializeDesign(const Design& design);

// What an atomic write may replace. Never anything but a regular file: a symbolic link, FIFO,
// device or folder at the path is refused, and so is a read-only file.
enum class Replace {
  kRegularFile,  // an existing writable regular file is replaced
  kNever,        // the path must not exist (checked again at the rename: RENAME_NOREPLACE)
};

// Writes atomically: a temporary file in the same folder, fsync, rename. On any failure the
// target is untouched and no temporary is left behind; throws IoError naming the path.
void SaveDesign(const Design& design, const std::string& path,
                Replace replace = Replace::kRegularFile);

// Same atomic write for any text (reports, CSV) so no command ever leaves a partial file.
void WriteFileAtomically(const std::string& path, const std::string& contents,
                         Replace replace = Replace::kRegularFile);

}  // namespace cerar
