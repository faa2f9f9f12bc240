#pragma once
// Parsing a design file's JSON with bounds that hold *while* it is read (docs/design-format.md,
// "Limits"), so that a hostile file is rejected at the first value past a bound instead of after
// it has been read, built in memory and walked:
//   - nesting: at most kMaxJsonDepth arrays/objects deep anywhere, and kMaxParameterDepth inside
//     provenance.parameters;
//   - member names: no object has the same name twice (a first-wins reader would otherwise load
//     a different design from the same file);
//   - free-form members (provenance.parameters, provenance.construction, notes, the names in
//     predicted_error): kMaxFreeFormValues values and kMaxFreeFormBytes bytes in all, counted
//     as Design::Create counts them, so every valid design written can be read back;
//   - structural members (everything else outside the matrices: figures, provenance, unknown
//     members): at most kMaxStructureMembers names per object, strings and names of at most
//     kMaxStructureString bytes, kMaxStructureValues values in all;
//   - matrices: once N and c have been read (CERAR writes them first), at most N matrices of
//     L (encoders) or c (decoders) rows of c entries; before that, the bounds of kMaxN, kMaxC
//     and kMaxMatrixEntries.
// Memory while parsing is then bounded by the design's own size (plus the free-form budget)
// when N and c precede the matrices, and by a small multiple of the file's size otherwise.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cerar/format/design.h"

namespace cerar::detail {

inline constexpr int kMaxJsonDepth = 2 + kMaxParameterDepth;  // top level, provenance, parameters
inline constexpr std::int64_t kMaxStructureMembers = 64;
inline constexpr std::size_t kMaxStructureString = 256;
inline constexpr std::int64_t kMaxStructureValues = std::int64_t{1} << 20;  // 8 per-rank arrays

// Watches the parser's events (nlohmann's parser callback) and throws DesignError
// "<source>: ..." at the first bound crossed. One guard per document.
class JsonGuard {
 public:
  explicit JsonGuard(std::string source) : source_(std::move(source)) {}
  void On(nlohmann::json::parse_event_t event, const nlohmann::json& parsed);

 private:
  enum class Role {
    kTop,        // the top-level object
    kStructure,  // provenance, figures and their members, anything unknown
    kFreeForm,   // provenance.parameters, notes, predicted_error and everything inside
    kMatrices,   // encoders or decoders
    kMatrix,     // one E_i or D_i
    kRow,        // one row of a matrix
    kInRow,      // anything nested inside a row (rejected by the reader later; counted here)
  };
  struct Frame {
    Role role;
    bool object;
    std::int64_t count = 0;  // entries so far (members of an object, items of an array)
    std::string name;        // member name in the parent (objects), else empty
    std::int64_t index = -1;  // index in the parent (arrays), else -1
    char matrix = 0;         // 'E' or 'D' inside encoders/decoders
    std::int64_t matrix_index = -1, row_index = -1;
    int free_depth = 0;      // 1 for a free-form member's own container
    std::string pending;     // objects: the member name whose value comes next
    std::unordered_set<std::string> names;  // objects: names seen (duplicates are rejected)
  };

  [[noreturn]] void Fail(const std::string& what) const;
  std::string Path() const;  // where the parser is, for messages ("provenance.parameters.a[2]")
  void Open(bool object);
  void Close();
  void Name(const std::string& name);
  void Scalar(const nlohmann::json& value);
  // Counts one more entry of the innermost container; returns the role of that entry.
  Role Enter(bool container);
  void AddFreeFormValue();
  void AddFreeFormBytes(std::size_t bytes);
  std::int64_t MatrixRowsBound(char matrix) const;
  std::int64_t MatrixColsBound() const;

  std::string source_;
  std::vector<Frame> stack_;
  std::int64_t file_N_ = 0, file_c_ = 0;  // N and c as read (0: not yet, or not an integer)
  std::int64_t N_ = 0, c_ = 0;            // both, once they form a valid design size
  std::int64_t matrix_values_ = 0;
  std::int64_t structure_values_ = 0;
  std::int64_t free_values_ = 0;
  std::int64_t free_bytes_ = 0;
};

// Parses with the guard: `input` is what nlohmann::json::parse takes (a string, or a pair of
// input iterators). Malformed JSON throws nlohmann's parse_error; a bound, DesignError.
template <class... Input>
nlohmann::json ParseBoundedJson(const std::string& source, Input&&... input) {
  JsonGuard guard(source);
  return nlohmann::json::parse(
      std::forward<Input>(input)...,
      [&guard](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        guard.On(event, parsed);
        return true;
      });
}

}  // namespace cerar::detail
