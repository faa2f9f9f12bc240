#include "sizes.h"

#include <cctype>
#include <sstream>

#include "cerar/errors.h"

namespace cerar::bench {

std::size_t ParseSize(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) throw InvalidArgument("size '" + text + "': expected a number like 4KiB");
  const std::string unit = text.substr(pos);
  std::size_t mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K") mult = std::size_t{1} << 10;
  else if (unit == "MiB" || unit == "M") mult = std::size_t{1} << 20;
  else if (unit == "GiB" || unit == "G") mult = std::size_t{1} << 30;
  else throw InvalidArgument("size '" + text + "': unit '" + unit + "' is not B, KiB, MiB or GiB");
  return std::stoull(text.substr(0, pos)) * mult;
}

std::vector<std::size_t> ParseSizes(const std::string& list) {
  std::vector<std::size_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(ParseSize(item));
  if (out.empty()) throw InvalidArgument("sizes '" + list + "': empty list");
  return out;
}

std::string FormatSize(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

}  // namespace cerar::bench
