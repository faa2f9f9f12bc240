#pragma once
// The canonical byte string of a JSON value and the design file's integrity value over it
// (docs/design-format.md, "Integrity"). Python's read_design.py implements the same rules.
#include <nlohmann/json.hpp>
#include <string>

namespace cerar::detail {

inline constexpr const char* kCanonicalTag = "cerar-design-canonical-v1\n";

// "sha256:" + hex SHA-256 of kCanonicalTag followed by the canonical bytes of `document`
// with its top-level "integrity" member left out.
std::string IntegrityValue(const nlohmann::json& document);

}  // namespace cerar::detail
