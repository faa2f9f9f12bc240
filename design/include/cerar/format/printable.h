#pragma once
// Text that came from a file or an argument, made safe for a one-line message on a terminal.
#include <cstddef>
#include <string>
#include <string_view>

namespace cerar {

// Returns `text` with everything that could break a one-line message or drive a terminal
// escaped: control characters as \n, \r, \t or \xNN (ESC is \x1b), bytes that are not valid
// UTF-8 as \xNN, and the invisible code points that reorder or break lines (C1 controls
// U+0080-U+009F, bidirectional overrides U+202A-U+202E and U+2066-U+2069, U+2028, U+2029) as
// \u{NNNN}. Backslashes are kept as they are, so escaping twice changes nothing. Text longer
// than `max_bytes` is cut at a character boundary and ends "...(+K bytes)".
std::string Printable(std::string_view text, std::size_t max_bytes = 200);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points above
// U+10FFFF): what a JSON file can carry.
bool IsValidUtf8(std::string_view text);

}  // namespace cerar
