#include "cli_checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>

#include "cerar/errors.h"
#include "cerar/format/printable.h"

namespace cerar::cli {

void CheckEveryValue(CLI::App& app) {
  static const CLI::Validator not_empty(
      [](std::string& text) { return text.empty() ? std::string("empty value") : std::string(); },
      "");
  // CLI11 reads integers with strtoll base 0 and clamps 64-bit ones: -N 010 would be 8 and
  // --seed 2^70 would be 2^64 - 1. Leading zeros are dropped, and a value past the 64-bit type's
  // range is refused (narrower types get CLI11's own "Could not convert").
  auto decimal = [](std::uint64_t limit) {
    return CLI::Validator(
        [limit](std::string& text) {
          const std::size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+');
          std::size_t zeros = sign;
          while (zeros + 1 < text.size() && text[zeros] == '0' &&
                 std::isdigit(static_cast<unsigned char>(text[zeros + 1])))
            ++zeros;
          text.erase(sign, zeros - sign);
          const std::string digits = text.substr(sign);
          const std::string max = std::to_string(limit);
          if (!digits.empty() &&
              std::all_of(digits.begin(), digits.end(),
                          [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }) &&
              (digits.size() > max.size() || (digits.size() == max.size() && digits > max)))
            return "expected an integer <= " + max + ", got " + text;
          return std::string();
        },
        "");
  };
  static const CLI::Validator decimal_int64 = decimal(std::numeric_limits<std::int64_t>::max());
  static const CLI::Validator decimal_uint64 = decimal(std::numeric_limits<std::uint64_t>::max());
  for (CLI::Option* option : app.get_options()) {
    if (option->get_type_size_max() == 0) continue;
    option->check(not_empty);
    const std::string type = option->get_type_name();
    if (type.rfind("INT", 0) == 0) option->transform(decimal_int64);
    if (type.rfind("UINT", 0) == 0) option->transform(decimal_uint64);
  }
  for (CLI::App* sub : app.get_subcommands({})) CheckEveryValue(*sub);
}

int ParseArguments(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << Printable(e.what(), 4096) << " (see " << app.get_name()
              << " --help)\n";
    return 2;
  }
  return -1;
}

void RequireWritable(const std::string& path, bool force) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  const std::string shown = Printable(path, 1024);
  fs::path p(path);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw IoError("output " + shown + ": folder " + Printable(dir.string(), 1024) +
                  " does not exist");
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw IoError("output " + shown + " is a folder, expected a file");
    if (!S_ISREG(info.st_mode)) {
      throw IoError("output " + shown + " exists and is not a regular file (" +
                    (S_ISLNK(info.st_mode) ? "a symbolic link" : "a FIFO, device or socket") +
                    "); cerar writes only regular files");
    }
    if (!force) throw IoError("output " + shown + " exists; pass --force to replace it");
    if ((info.st_mode & 0222) == 0) {
      throw IoError("output " + shown + " is read-only; cerar does not replace it");
    }
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw IoError("output " + shown + ": folder " + Printable(dir.string(), 1024) +
                  " is not writable");
  }
}

}  // namespace cerar::cli
