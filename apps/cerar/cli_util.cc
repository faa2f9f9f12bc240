#include "cli_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <utility>

#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "commands.h"
#include "watchdog.h"

namespace cerar::cli {

void Emit(const std::string& text, const std::string& path, bool force) {
  Watchdog::StandDown();  // the result is complete: never cut its output short
  if (path.empty()) {
    std::cout << text << std::flush;
  } else {
    WriteFileAtomically(path, text, ReplaceMode(force));
  }
}

void FlushStandardOutput() {
  errno = 0;
  std::cout.flush();  // with stdio sync, this is fflush(stdout): keep its errno
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (!flushed || std::ferror(stdout) || !std::cout)
    throw CliError(std::string("cannot write to standard output (") +
                   (error ? std::strerror(error) : "write error") + ")");
}

std::string Number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string OptionMessageInFlags(std::string message) {
  static const std::pair<const char*, const char*> kWords[] = {
      {"N = ", "-N "},
      {"c = ", "-c "},
      {"kappa_max = ", "--kappa-max "},
      {"kappa range ", "--kappa "},
      {"points = ", "--points "},
      {"time_limit_s = ", "--time-limit "},
      {"max_evaluations = ", "--max-evaluations "},
      {"continuation_from = ", "--continuation-from "},
      {"lbfgs_memory = ", "--lbfgs-memory "},
      {"max_digits = ", "--max-digits "},
      {"kContinuationAuto (-1)", "-1 (auto)"},
      {"kLbfgsMemoryAuto (-1)", "-1 (auto)"}};
  for (const auto& [from, to] : kWords) {
    const std::string key = from, replacement = to;
    for (std::size_t at = message.find(key); at != std::string::npos;
         at = message.find(key, at + 1)) {
      // Only where a word starts: "N = " inside "max_N = " is not the field N.
      const bool word_start =
          at == 0 || !(std::isalnum(static_cast<unsigned char>(message[at - 1])) ||
                       message[at - 1] == '_' || message[at - 1] == '-');
      if (!word_start) continue;
      message.replace(at, key.size(), replacement);
      at += replacement.size() - 1;
    }
  }
  return message;
}

const CLI::Validator& NonNegativeInteger() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "expected a non-negative integer, got an empty value";
        for (const char ch : text) {
          if (!std::isdigit(static_cast<unsigned char>(ch))) {
            return "expected a non-negative integer, got \"" + Printable(text, 40) + "\"";
          }
        }
        return "";
      },
      "UINT");
  return validator;
}

LoadOptions& DesignLoadOptions() {
  static LoadOptions options;
  return options;
}

}  // namespace cerar::cli
