// JsonGuard (bounded_json.h): the bounds a design file's JSON must keep while it is parsed.
#include "bounded_json.h"

#include "cerar/errors.h"
#include "cerar/format/printable.h"

namespace cerar::detail {

using Event = nlohmann::json::parse_event_t;

void JsonGuard::On(Event event, const nlohmann::json& parsed) {
  switch (event) {
    case Event::object_start: Open(true); return;
    case Event::array_start: Open(false); return;
    case Event::key: Name(parsed.get_ref<const std::string&>()); return;
    case Event::value: Scalar(parsed); return;
    case Event::object_end:
    case Event::array_end: Close(); return;
  }
}

void JsonGuard::Fail(const std::string& what) const {
  throw DesignError(source_ + ": " + what);
}

std::string JsonGuard::Path() const {
  // Matrices are named as the reader names them ("E[3] row 2"); everything else as a JSON path.
  std::string path;
  for (const Frame& f : stack_) {
    if (f.role == Role::kMatrix) {
      path.assign(1, f.matrix);
      path += '[';
      path += std::to_string(f.matrix_index);
      path += ']';
    } else if (f.role == Role::kRow) {
      path += " row ";
      path += std::to_string(f.row_index);
    } else if (f.index >= 0) {
      path += '[';
      path += std::to_string(f.index);
      path += ']';
    } else if (!f.name.empty()) {
      if (!path.empty()) path += '.';
      path += Printable(f.name, 40);
    }
  }
  return path.empty() ? "the top level" : path;
}

std::int64_t JsonGuard::MatrixRowsBound(char matrix) const {
  if (N_) return matrix == 'E' ? c_ + N_ - 2 : c_;
  return matrix == 'E' ? std::int64_t{kMaxC} + kMaxN - 2 : kMaxC;
}

std::int64_t JsonGuard::MatrixColsBound() const { return N_ ? c_ : kMaxC; }

void JsonGuard::AddFreeFormValue() {
  if (++free_values_ > kMaxFreeFormValues) {
    Fail("free-form members (provenance.parameters, notes, predicted_error) hold more than " +
         std::to_string(kMaxFreeFormValues) + " values (at " + Path() + ")");
  }
}

void JsonGuard::AddFreeFormBytes(std::size_t bytes) {
  free_bytes_ += std::int64_t(bytes);
  if (free_bytes_ > kMaxFreeFormBytes) {
    Fail("free-form members (provenance, notes, predicted_error) hold more than " +
         std::to_string(kMaxFreeFormBytes) + " bytes of text (at " + Path() + ")");
  }
}

JsonGuard::Role JsonGuard::Enter(bool container) {
  Frame& parent = stack_.back();
  const std::int64_t count = ++parent.count;
  const bool free_form_root =
      (parent.role == Role::kTop && parent.pending == "notes") ||
      (parent.role == Role::kStructure && parent.object && stack_.size() == 2 &&
       (parent.pending == "parameters" || parent.pending == "predicted_error"));
  if (parent.role == Role::kFreeForm || free_form_root) {
    AddFreeFormValue();
    return Role::kFreeForm;
  }
  switch (parent.role) {
    case Role::kTop:
    case Role::kStructure:
      if (parent.object && count > kMaxStructureMembers) {
        Fail(Path() + " has more than " + std::to_string(kMaxStructureMembers) + " members");
      }
      if (++structure_values_ > kMaxStructureValues) {
        Fail("figures and other structural members hold more than " +
             std::to_string(kMaxStructureValues) + " values (at " + Path() + ")");
      }
      if (parent.role == Role::kTop && container &&
          (parent.pending == "encoders" || parent.pending == "decoders")) {
        return Role::kMatrices;  // an object here is counted as one; the reader rejects it
      }
      return Role::kStructure;
    case Role::kMatrices: {
      const std::int64_t bound = N_ ? N_ : kMaxN;
      if (count > bound) {
        Fail(std::string(parent.matrix == 'E' ? "encoders" : "decoders") + " has more than " +
             std::to_string(bound) + " matrices, expected " +
             (N_ ? std::to_string(N_) + " = N" : "at most " + std::to_string(kMaxN)));
      }
      break;
    }
    case Role::kMatrix: {
      const std::int64_t bound = MatrixRowsBound(parent.matrix);
      if (count > bound) {
        Fail(Path() + " has more than " + std::to_string(bound) + " rows, expected " +
             (N_ ? std::to_string(bound) + (parent.matrix == 'E' ? " = c + N - 2" : " = c")
                 : "at most " + std::to_string(bound)));
      }
      break;
    }
    case Role::kRow: {
      const std::int64_t bound = MatrixColsBound();
      if (count > bound) {
        Fail(Path() + " has more than " + std::to_string(bound) + " columns, expected " +
             (N_ ? std::to_string(bound) + " = c" : "at most " + std::to_string(bound)));
      }
      break;
    }
    case Role::kInRow:
    case Role::kFreeForm:
      break;
  }
  // Inside encoders/decoders: matrices, rows, entries (and anything nested in a row) all count.
  // A valid design has no more rows than entries (c >= 1), so this admits every valid design.
  if (++matrix_values_ > 2 * kMaxMatrixEntries + 2 * std::int64_t{kMaxN}) {
    Fail("encoders and decoders hold more than " + std::to_string(kMaxMatrixEntries) +
         " entries (at " + Path() + ")");
  }
  if (parent.role == Role::kMatrices) return Role::kMatrix;
  if (parent.role == Role::kMatrix) return Role::kRow;
  return Role::kInRow;
}

void JsonGuard::Open(bool object) {
  Frame frame{};
  frame.object = object;
  if (stack_.empty()) {
    frame.role = object ? Role::kTop : Role::kStructure;
    stack_.push_back(std::move(frame));
    return;
  }
  if (int(stack_.size()) >= kMaxJsonDepth) {
    Fail("JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at " + Path() +
         ")");
  }
  frame.role = Enter(true);
  const Frame& parent = stack_.back();
  if (parent.object) frame.name = parent.pending;
  else frame.index = parent.count - 1;
  frame.matrix = frame.role == Role::kMatrices ? (parent.pending == "encoders" ? 'E' : 'D')
                                               : parent.matrix;
  frame.matrix_index = frame.role == Role::kMatrix ? parent.count - 1 : parent.matrix_index;
  if (frame.role == Role::kRow) frame.row_index = parent.count - 1;
  if (frame.role == Role::kFreeForm) {
    frame.free_depth = parent.role == Role::kFreeForm ? parent.free_depth + 1 : 1;
  }
  stack_.push_back(std::move(frame));
  if (stack_.back().free_depth > kMaxParameterDepth) {
    Fail("free-form member nests deeper than " + std::to_string(kMaxParameterDepth) +
         " levels (at " + Path() + ")");
  }
}

void JsonGuard::Close() {
  if (!stack_.empty()) stack_.pop_back();
}

void JsonGuard::Name(const std::string& name) {
  Frame& f = stack_.back();
  if (f.role == Role::kFreeForm) {
    AddFreeFormValue();
    AddFreeFormBytes(name.size());
  } else if (name.size() > kMaxStructureString) {
    Fail("member name \"" + Printable(name, 40) + "\" of " + std::to_string(name.size()) +
         " bytes in " + Path() + ", expected at most " + std::to_string(kMaxStructureString));
  }
  if (!f.names.insert(name).second) {
    Fail("duplicate member \"" + Printable(name) + "\" in " + Path() +
         " (each member may appear once)");
  }
  f.pending = name;
}

void JsonGuard::Scalar(const nlohmann::json& value) {
  if (stack_.empty()) return;  // a top-level scalar: the reader rejects it
  const Frame& parent = stack_.back();
  const bool top = parent.role == Role::kTop;
  const bool construction = parent.role == Role::kStructure && parent.object &&
                            stack_.size() == 2 && parent.pending == "construction";
  const Role role = Enter(false);
  if (top && (parent.pending == "N" || parent.pending == "c")) {
    // Once N and c form a valid size, the matrices are bounded by them; until then (or if they
    // are invalid, which the reader reports) by the general limits.
    std::int64_t v = 0;
    if (value.is_number_unsigned()) {
      v = value.get<std::uint64_t>() <= std::uint64_t{kMaxN} + kMaxC ? value.get<std::int64_t>() : 0;
    } else if (value.is_number_integer()) {
      v = value.get<std::int64_t>();
    }
    (parent.pending == "N" ? file_N_ : file_c_) = v;
    const std::int64_t n = file_N_, c = file_c_;
    const bool valid = n >= 2 && n <= kMaxN && c >= 1 && c <= kMaxC &&
                       n * ((c + n - 2) * c + c * c) <= kMaxMatrixEntries;
    N_ = valid ? n : 0;
    c_ = valid ? c : 0;
  }
  if (value.is_string()) {
    const std::size_t bytes = value.get_ref<const std::string&>().size();
    if (role == Role::kFreeForm || construction) {
      AddFreeFormBytes(bytes);
    } else if (bytes > kMaxStructureString) {
      const std::string at =
          parent.object ? (top ? "" : Path() + ".") + Printable(parent.pending, 40)
                        : Path() + "[" + std::to_string(parent.count - 1) + "]";
      Fail("a string of " + std::to_string(bytes) + " bytes at " + at +
           ", expected at most " + std::to_string(kMaxStructureString));
    }
  }
}

}  // namespace cerar::detail
