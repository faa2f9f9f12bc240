#include "canonical.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "cerar/errors.h"
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
// Scalars here; arrays and objects are walked by Put with an explicit stack.
void PutScalar(Sha256& sha, const nlohmann::json& j) {
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
    case Type::number_float:
      sha.Update("d");
      PutU64(sha, std::bit_cast<std::uint64_t>(j.get<double>()));
      return;
    case Type::string:
      PutString(sha, j.get_ref<const std::string&>());
      return;
    default:
      throw DesignError(std::string("a JSON ") + j.type_name() + " value cannot be hashed");
  }
}

// One open array or object: its items (arrays) or its keys in canonical order (objects), and
// how many have been encoded.
struct Frame {
  const nlohmann::json* value;
  std::vector<const std::string*> keys;
  std::size_t next = 0;
};

// Encodes `j`: scalars at once, containers by their header, pushed for their items. Iterative, so
// the depth of a document costs heap, not stack (the reader bounds it anyway, bounded_json.h).
void Open(Sha256& sha, const nlohmann::json& j, bool top_level, std::vector<Frame>& stack) {
  if (j.is_array()) {
    sha.Update("a");
    PutU64(sha, j.size());
    stack.push_back({&j, {}, 0});
    return;
  }
  if (!j.is_object()) {
    PutScalar(sha, j);
    return;
  }
  // Keys sorted by their UTF-8 bytes as unsigned values (Python: sorted by k.encode()).
  Frame frame{&j, {}, 0};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (top_level && it.key() == "integrity") continue;
    frame.keys.push_back(&it.key());
  }
  std::sort(frame.keys.begin(), frame.keys.end(), [](const std::string* a, const std::string* b) {
    return std::lexicographical_compare(
        a->begin(), a->end(), b->begin(), b->end(),
        [](char x, char y) { return static_cast<unsigned char>(x) < static_cast<unsigned char>(y); });
  });
  sha.Update("o");
  PutU64(sha, frame.keys.size());
  stack.push_back(std::move(frame));
}

void Put(Sha256& sha, const nlohmann::json& document) {
  std::vector<Frame> stack;
  Open(sha, document, true, stack);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const nlohmann::json* item = nullptr;
    if (f.value->is_array()) {
      if (f.next < f.value->size()) item = &(*f.value)[f.next++];
    } else if (f.next < f.keys.size()) {
      const std::string* key = f.keys[f.next++];
      PutString(sha, *key);
      item = &f.value->find(*key).value();
    }
    if (item) Open(sha, *item, false, stack);  // may reallocate: f is not used after this
    else stack.pop_back();
  }
}

}  // namespace

std::string IntegrityValue(const nlohmann::json& document) {
  Sha256 sha;
  sha.Update(kCanonicalTag);
  Put(sha, document);
  const auto digest = sha.Digest();
  return "sha256:" + ToHex(digest.data(), digest.size());
}

}  // namespace cerar::detail
