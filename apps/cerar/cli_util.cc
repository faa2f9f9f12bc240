#include "cli_util.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cerar/format/design_file.h"
#include "cerar/format/errors.h"

namespace cerar::cli {

void RequireWritable(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError("output " + path + ": folder " + dir.string() + " does not exist");
  if (fs::is_directory(p, ec)) throw IoError("output " + path + " is a folder, expected a file");
  if (::access(dir.c_str(), W_OK) != 0)
    throw IoError("output " + path + ": folder " + dir.string() + " is not writable");
}

void Emit(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::cout << text << std::flush;
  } else {
    WriteFileAtomically(path, text);
  }
}

}  // namespace cerar::cli

namespace cerar::cli {

std::string Number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

}  // namespace cerar::cli
