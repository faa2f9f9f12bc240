#pragma once
// Checks shared by Design::Create and the design-file loader (internal).
#include <cstdint>
#include <string>

namespace cerar::detail {

// Throws DesignError "<source>: N = 1, expected N >= 2" etc. for N < 2, c < 1, N > kMaxN,
// c > kMaxC or more than kMaxMatrixEntries matrix entries. Takes 64-bit values so a file's
// absurd N is reported as written, and runs before anything is allocated.
void CheckDesignSize(std::int64_t N, std::int64_t c, const std::string& source);

// Text of a double for messages: shortest form that round-trips ("nan", "inf" included).
std::string NumberText(double value);

}  // namespace cerar::detail
