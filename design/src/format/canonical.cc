#include "canonical.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "cerar/format/errors.h"
#include "sha256.h"

namespace cerar::detail {
namespace {

void PutU64(Sha256& sha, std::uint64_t v) {
  std::uint8_t b[8];
  for (int k = 0; k < 8; ++k) b[k] = std::uint8_t(v >> (8 * k));
  sha.Update(b, 8);
}

void PutString(Sha256& sha, const std::string& s) {
  sha.Update("s");
  PutU64(sha, s.size());
  sha.Update(s);
}

void PutInteger(Sha256& sha, const std::string& decimal) {
  sha.Update("i");
  sha.Update(decimal);
  sha.Update(";");
}

// Type-tagged encoding; integers keep their decimal text, floats their exact binary64 bytes.
void Put(Sha256& sha, const nlohmann::json& j, bool top_level) {
  using Type = nlohmann::json::value_t;
  switch (j.type()) {
    case Type::null:
      sha.Update("n");
      return;
    case Type::boolean:
      sha.Update(j.get<bool>() ? "t" : "f");
      return;
    case Type::number_integer:
      PutInteger(sha, std::to_string(j.get<std::int64_t>()));
      return;
    case Type::number_unsigned:
      PutInteger(sha, std::to_string(j.get<std::uint64_t>()));
      return;
    case Type::number_float: {
      sha.Update("d");
      PutU64(sha, std::bit_cast<std::uint64_t>(j.get<double>()));
      return;
    }
    case Type::string:
      PutString(sha, j.get_ref<const std::string&>());
      return;
    case Type::array:
      sha.Update("a");
      PutU64(sha, j.size());
      for (const auto& item : j) Put(sha, item, false);
      return;
    case Type::object: {
      // Keys sorted by their UTF-8 bytes as unsigned values (Python: sorted by k.encode()).
      std::vector<const std::string*> keys;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (top_level && it.key() == "integrity") continue;
        keys.push_back(&it.key());
      }
      std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) {
        return std::lexicographical_compare(
            a->begin(), a->end(), b->begin(), b->end(),
            [](char x, char y) { return static_cast<unsigned char>(x) < static_cast<unsigned char>(y); });
      });
      sha.Update("o");
      PutU64(sha, keys.size());
      for (const std::string* key : keys) {
        PutString(sha, *key);
        Put(sha, j.at(*key), false);
      }
      return;
    }
    default:
      throw DesignError(std::string("a JSON ") + j.type_name() + " value cannot be hashed");
  }
}

}  // namespace

std::string IntegrityValue(const nlohmann::json& document) {
  Sha256 sha;
  sha.Update(kCanonicalTag);
  Put(sha, document, true);
  const auto digest = sha.Digest();
  return "sha256:" + ToHex(digest.data(), digest.size());
}

}  // namespace cerar::detail
