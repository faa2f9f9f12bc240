#pragma once
// Byte sizes on the command line: "4KiB,16MiB,1GiB,512" (B, KiB, MiB, GiB; K, M, G also).
#include <cstddef>
#include <string>
#include <vector>

namespace cerar::bench {

std::size_t ParseSize(const std::string& text);                 // throws InvalidArgument
std::vector<std::size_t> ParseSizes(const std::string& list);   // comma-separated
std::string FormatSize(std::size_t bytes);                       // "4KiB", "256MiB", "1000B"

}  // namespace cerar::bench
