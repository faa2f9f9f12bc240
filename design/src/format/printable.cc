// Printable and IsValidUtf8 (cerar/format/printable.h).
#include "cerar/format/printable.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace cerar {
namespace {

// Length of the well-formed UTF-8 sequence at text[at] (1-4), or 0 when it is not one
// (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t SequenceLength(std::string_view text, std::size_t at, std::uint32_t& code) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[at + k]); };
  const std::uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    code = b0;
    return 1;
  }
  std::size_t n;
  std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    code = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    code = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    code = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (at + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const std::uint8_t b = byte(k);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    code = (code << 6) | (b & 0x3F);
  }
  return n;
}

bool IsInvisibleFormatting(std::uint32_t code) {
  return (code >= 0x80 && code <= 0x9F) || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0x2028 || code == 0x2029;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  std::uint32_t code;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = SequenceLength(text, at, code);
    if (n == 0) return false;
    at += n;
  }
  return true;
}

std::string Printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  char buf[16];
  std::size_t at = 0;
  while (at < text.size() && out.size() < max_bytes) {
    std::uint32_t code = 0;
    const std::size_t n = SequenceLength(text, at, code);
    const auto b = static_cast<std::uint8_t>(text[at]);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      out += buf;
      at += 1;
    } else if (n == 1 && (b < 0x20 || b == 0x7F)) {
      if (b == '\n') out += "\\n";
      else if (b == '\r') out += "\\r";
      else if (b == '\t') out += "\\t";
      else {
        std::snprintf(buf, sizeof buf, "\\x%02x", b);
        out += buf;
      }
      at += 1;
    } else if (IsInvisibleFormatting(code)) {
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(code));
      out += buf;
      at += n;
    } else {
      out.append(text.substr(at, n));
      at += n;
    }
  }
  if (at < text.size()) out += "...(+" + std::to_string(text.size() - at) + " bytes)";
  return out;
}

}  // namespace cerar
