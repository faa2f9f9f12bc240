#include "sizes.h"

#include <charconv>
#include <limits>

#include "cerar/errors.h"
#include "cerar/format/printable.h"

namespace cerar::bench {

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(list.substr(start, comma - start));
  out.push_back(list.substr(start));
  return out;
}

std::size_t ParseSize(const std::string& text, const std::string& option) {
  const std::string what = option + " '" + Printable(text) + "'";
  std::uint64_t n = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ptr == text.data()) throw InvalidArgument(what + ": expected a number of bytes like 4KiB");
  const std::string unit(ptr, end);
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "KiB" || unit == "K") shift = 10;
  else if (unit == "MiB" || unit == "M") shift = 20;
  else if (unit == "GiB" || unit == "G") shift = 30;
  else throw InvalidArgument(what + ": unit '" + Printable(unit) + "' is not B, KiB, MiB or GiB");
  constexpr std::uint64_t kMax = std::numeric_limits<std::size_t>::max();
  if (ec == std::errc::result_out_of_range || n > (kMax >> shift))
    throw InvalidArgument(what + ": more than 2^64 - 1 bytes");
  return std::size_t(n << shift);
}

std::vector<std::size_t> ParseSizes(const std::string& list, const std::string& option) {
  std::vector<std::size_t> out;
  for (const std::string& item : SplitList(list)) {
    if (item.empty()) throw InvalidArgument(option + " '" + Printable(list) + "': empty item");
    out.push_back(ParseSize(item, option));
  }
  return out;
}

void RequireWholeElements(const std::vector<std::size_t>& sizes, std::size_t element_bytes,
                          const std::string& dtype, const std::string& option) {
  for (std::size_t b : sizes) {
    const std::string what = option + " " + FormatSize(b) + ": ";
    if (b < element_bytes)
      throw InvalidArgument(what + "less than one " + dtype + " element (" +
                            std::to_string(element_bytes) + " bytes)");
    if (b % element_bytes)
      throw InvalidArgument(what + "not a whole number of " + dtype + " elements (" +
                            std::to_string(element_bytes) + " bytes each)");
  }
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
