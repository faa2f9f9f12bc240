#pragma once
// Byte sizes on the command line: "4KiB,16MiB,1GiB,512" (B, KiB, MiB, GiB; K, M, G also).
#include <cstddef>
#include <string>
#include <vector>

namespace cerar::bench {

// "a,,b" -> {"a", "", "b"}: empty items are kept, for the caller to refuse.
std::vector<std::string> SplitList(const std::string& list);

// Throw InvalidArgument naming `option` and the text: not a number, an unknown unit, an empty
// list item, or more than 2^64 - 1 bytes.
std::size_t ParseSize(const std::string& text, const std::string& option);
std::vector<std::size_t> ParseSizes(const std::string& list, const std::string& option);

// Every size must be a whole number (>= 1) of elements of `element_bytes` bytes: the bench runs
// exactly the bytes it reports. Throws InvalidArgument naming `option` and the size.
void RequireWholeElements(const std::vector<std::size_t>& sizes, std::size_t element_bytes,
                          const std::string& dtype, const std::string& option);

std::string FormatSize(std::size_t bytes);  // "4KiB", "256MiB", "1000B"

}  // namespace cerar::bench
