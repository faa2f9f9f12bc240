// Design::Create (validation of PROTOCOL.md §4-§5 rules), accessors, window and fingerprint.
#include "cerar/format/design.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "cerar/format/design_parts.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "checks.h"
#include "sha256.h"

namespace cerar {

bool WithinDesignLimits(std::int64_t N, std::int64_t c) {
  // Both factors bounded first, so the product cannot overflow.
  return N >= 2 && c >= 1 && N <= kMaxN && c <= kMaxC &&
         N * ((c + N - 2) * c + c * c) <= kMaxMatrixEntries;
}

namespace detail {

void CheckDesignSize(std::int64_t N, std::int64_t c, const std::string& source) {
  auto fail = [&](const std::string& what) { throw DesignError(source + ": " + what); };
  if (N < 2) fail("N = " + std::to_string(N) + ", expected N >= 2");
  if (c < 1) fail("c = " + std::to_string(c) + ", expected c >= 1");
  if (N > kMaxN) fail("N = " + std::to_string(N) + " exceeds the limit " + std::to_string(kMaxN));
  if (c > kMaxC) fail("c = " + std::to_string(c) + " exceeds the limit " + std::to_string(kMaxC));
  // N (L c + c c) entries in all; both factors are bounded above so this cannot overflow.
  const std::int64_t entries = N * ((c + N - 2) * c + c * c);
  if (entries > kMaxMatrixEntries) {
    fail("N = " + std::to_string(N) + ", c = " + std::to_string(c) + " need " +
         std::to_string(entries) + " matrix entries, above the limit " +
         std::to_string(kMaxMatrixEntries));
  }
}

std::string NumberText(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace detail

namespace {

[[noreturn]] void Fail(const std::string& source, const std::string& what) {
  throw DesignError(source + ": " + what);
}

void CheckMatrix(const MatrixXd& m, const std::string& name, Eigen::Index rows,
                 const std::string& rows_rule, Eigen::Index cols, const std::string& cols_rule,
                 const std::string& source) {
  if (m.rows() != rows) {
    Fail(source, name + " has " + std::to_string(m.rows()) + " rows, expected " +
                     std::to_string(rows) + " = " + rows_rule);
  }
  if (m.cols() != cols) {
    Fail(source, name + " has " + std::to_string(m.cols()) + " columns, expected " +
                     std::to_string(cols) + " = " + cols_rule);
  }
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index k = 0; k < m.cols(); ++k) {
      if (!std::isfinite(m(r, k))) {
        Fail(source, name + "[" + std::to_string(r) + "][" + std::to_string(k) + "] = " +
                         detail::NumberText(m(r, k)) + ", expected a finite number");
      }
    }
  }
}

// A figure is a norm or a condition number: >= 0, +inf allowed (singular matrix), never NaN.
void CheckFigure(double value, const std::string& name, const std::string& source) {
  if (std::isnan(value) || value < 0) {
    Fail(source, name + " = " + detail::NumberText(value) + ", expected a number >= 0 or +inf");
  }
}

void CheckPerRank(const std::vector<double>& values, const std::string& name, int N,
                  const std::string& source) {
  if (!values.empty() && values.size() != std::size_t(N)) {
    Fail(source, name + " has " + std::to_string(values.size()) + " entries, expected " +
                     std::to_string(N) + " = N (or none)");
  }
  for (std::size_t k = 0; k < values.size(); ++k) {
    CheckFigure(values[k], name + "[" + std::to_string(k) + "]", source);
  }
}

// Strings go into JSON files: they must be valid UTF-8.
void CheckText(const std::string& text, const std::string& name, const std::string& source) {
  if (!IsValidUtf8(text)) Fail(source, name + " is not valid UTF-8");
}

// The free-form budget of cerar/format/design.h, counted exactly as the file reader counts it
// (bounded_json.h): every value, array, object and member name one; text in bytes.
class FreeFormBudget {
 public:
  explicit FreeFormBudget(const std::string& source) : source_(source) {}
  void Values(std::int64_t n, const std::string& where) {
    values_ += n;
    if (values_ > kMaxFreeFormValues) {
      Fail(source_, "free-form members (provenance.parameters, notes, predicted_error) hold more "
                    "than " + std::to_string(kMaxFreeFormValues) + " values (at " + where + ")");
    }
  }
  void Bytes(std::size_t n, const std::string& where) {
    bytes_ += std::int64_t(n);
    if (bytes_ > kMaxFreeFormBytes) {
      Fail(source_, "free-form members (provenance, notes, predicted_error) hold more than " +
                        std::to_string(kMaxFreeFormBytes) + " bytes of text (at " + where + ")");
    }
  }

 private:
  const std::string& source_;
  std::int64_t values_ = 0, bytes_ = 0;
};

bool IsPrecisionName(const std::string& p) {
  if (p == "float64") return true;
  if (p.size() < 3 || p.size() > 10 || p.compare(0, 2, "mp") != 0) return false;
  for (std::size_t k = 2; k < p.size(); ++k) {
    if (p[k] < '0' || p[k] > '9') return false;
  }
  return true;
}

void CheckFigures(const Figures& f, const std::string& name, int N, const std::string& source,
                  FreeFormBudget& budget) {
  CheckFigure(f.err_op, name + ".err_op", source);
  CheckFigure(f.err_rms, name + ".err_rms", source);
  CheckFigure(f.kappa_dec, name + ".kappa_dec", source);
  CheckFigure(f.kappa_enc, name + ".kappa_enc", source);
  CheckPerRank(f.err_op_per_rank, name + ".err_op_per_rank", N, source);
  CheckPerRank(f.err_rms_per_rank, name + ".err_rms_per_rank", N, source);
  CheckPerRank(f.kappa_dec_per_rank, name + ".kappa_dec_per_rank", N, source);
  CheckPerRank(f.kappa_enc_per_rank, name + ".kappa_enc_per_rank", N, source);
  if (!IsPrecisionName(f.precision)) {
    Fail(source, name + ".precision is \"" + Printable(f.precision) +
                     "\", expected \"float64\" or \"mp<digits>\" (e.g. \"mp50\")");
  }
  for (const auto& [figure, digits] : f.certified_digits) {
    if (figure != "err_op" && figure != "err_rms" && figure != "kappa_dec" &&
        figure != "kappa_enc") {
      CheckText(figure, name + ".certified_digits key", source);
      Fail(source, name + ".certified_digits names \"" + Printable(figure) +
                       "\", expected err_op, err_rms, kappa_dec or kappa_enc");
    }
    if (digits < 0 || digits > 17) {
      Fail(source, name + ".certified_digits[\"" + figure + "\"] = " + std::to_string(digits) +
                       ", expected 0 ... 17 (significant digits of a float64)");
    }
  }
  budget.Values(1 + 2 * std::int64_t(f.predicted_error.size()), name + ".predicted_error");
  for (const auto& [arithmetic, value] : f.predicted_error) {
    if (arithmetic.empty()) Fail(source, name + ".predicted_error has an empty arithmetic name");
    CheckText(arithmetic, name + ".predicted_error key", source);
    budget.Bytes(arithmetic.size(), name + ".predicted_error");
    CheckFigure(value, name + ".predicted_error[\"" + Printable(arithmetic) + "\"]", source);
  }
}

// Parameters are stored as JSON: numbers finite (JSON has no NaN/inf), text UTF-8, nesting at
// most kMaxParameterDepth, within the free-form budget. Walked with an explicit stack and named
// only on failure, so neither a deep nor a wide value costs more than its depth in memory.
void CheckParameters(const nlohmann::json& parameters, const std::string& source,
                     FreeFormBudget& budget) {
  struct Frame {
    const nlohmann::json* value;
    nlohmann::json::const_iterator next;
    std::int64_t index = 0;  // of `next` among the items
    const std::string* key = nullptr;  // how the parent names this value (objects)
    std::int64_t position = -1;        // its index in the parent (arrays)
  };
  std::vector<Frame> stack;
  // "provenance.parameters.a[2].b": the path of the value at `key`/`position` in the top frame.
  auto where = [&](const std::string* key, std::int64_t position) {
    std::string path = "provenance.parameters";
    auto step = [&](const std::string* k, std::int64_t p) {
      if (k) {
        path += '.';
        path += Printable(*k, 40);
      } else if (p >= 0) {
        path += '[';
        path += std::to_string(p);
        path += ']';
      }
    };
    for (std::size_t k = 1; k < stack.size(); ++k) step(stack[k].key, stack[k].position);
    step(key, position);
    return path;
  };
  auto visit = [&](const nlohmann::json& j, const std::string* key, std::int64_t position) {
    budget.Values(1, where(nullptr, -1));
    if (j.is_number_float() && !std::isfinite(j.get<double>())) {
      Fail(source, where(key, position) + " = " + detail::NumberText(j.get<double>()) +
                       ", expected a finite number (JSON cannot store it)");
    }
    if (j.is_binary()) {
      Fail(source, where(key, position) + " is binary data, which a design file cannot store");
    }
    if (j.is_discarded()) {  // nlohmann's parse-callback marker; it cannot be written or hashed
      Fail(source, where(key, position) + " is a discarded JSON value, which a design file "
                                          "cannot store");
    }
    if (j.is_string()) {
      CheckText(j.get_ref<const std::string&>(), where(key, position), source);
      budget.Bytes(j.get_ref<const std::string&>().size(), where(key, position));
    }
    if (j.is_array() || j.is_object()) {
      if (int(stack.size()) >= kMaxParameterDepth) {
        Fail(source, "provenance.parameters nests deeper than " +
                         std::to_string(kMaxParameterDepth) + " levels (at " +
                         where(key, position) + ")");
      }
      stack.push_back({&j, j.begin(), 0, key, position});
    }
  };
  visit(parameters, nullptr, -1);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.value->end()) {
      stack.pop_back();
      continue;
    }
    const nlohmann::json& item = *f.next;
    const std::string* key = f.value->is_object() ? &f.next.key() : nullptr;
    const std::int64_t position = f.value->is_object() ? -1 : f.index;
    ++f.next;
    ++f.index;
    if (key) {
      CheckText(*key, where(key, position) + " (its name)", source);
      budget.Values(1, where(key, position));
      budget.Bytes(key->size(), where(key, position));
    }
    visit(item, key, position);  // may push: f is not used after this
  }
}

void PutU32(detail::Sha256& sha, std::uint32_t v) {
  std::uint8_t b[4];
  for (int k = 0; k < 4; ++k) b[k] = std::uint8_t(v >> (8 * k));
  sha.Update(b, 4);
}

void PutMatrix(detail::Sha256& sha, const MatrixXd& m) {
  // Row-major, each entry as its 8 little-endian IEEE-754 bytes, whatever the host's order.
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index k = 0; k < m.cols(); ++k) {
      const auto bits = std::bit_cast<std::uint64_t>(m(r, k));
      std::uint8_t b[8];
      for (int i = 0; i < 8; ++i) b[i] = std::uint8_t(bits >> (8 * i));
      sha.Update(b, 8);
    }
  }
}

}  // namespace

Design Design::Create(DesignParts parts, const std::string& source) {
  detail::CheckDesignSize(parts.N, parts.c, source);
  const int N = parts.N, c = parts.c, L = c + N - 2;
  if (parts.encoders.size() != std::size_t(N)) {
    Fail(source, "has " + std::to_string(parts.encoders.size()) + " encoders, expected " +
                     std::to_string(N) + " = N");
  }
  if (parts.decoders.size() != std::size_t(N)) {
    Fail(source, "has " + std::to_string(parts.decoders.size()) + " decoders, expected " +
                     std::to_string(N) + " = N");
  }
  for (int i = 0; i < N; ++i) {
    CheckMatrix(parts.encoders[i], "E[" + std::to_string(i) + "]", L, "c + N - 2", c, "c", source);
  }
  for (int i = 0; i < N; ++i) {
    CheckMatrix(parts.decoders[i], "D[" + std::to_string(i) + "]", c, "c", c, "c", source);
  }
  FreeFormBudget budget(source);
  if (parts.figures) CheckFigures(*parts.figures, "figures", N, source, budget);
  if (parts.exact_figures) CheckFigures(*parts.exact_figures, "exact_figures", N, source, budget);
  const Provenance& p = parts.provenance;
  if (p.construction.empty()) Fail(source, "provenance.construction is empty");
  CheckText(p.construction, "provenance.construction", source);
  budget.Bytes(p.construction.size(), "provenance.construction");
  if (!p.parameters.is_object()) {
    Fail(source, std::string("provenance.parameters is a JSON ") + p.parameters.type_name() +
                     ", expected an object");
  }
  CheckParameters(p.parameters, source, budget);
  budget.Values(1 + std::int64_t(parts.notes.size()), "notes");
  for (std::size_t k = 0; k < parts.notes.size(); ++k) {
    CheckText(parts.notes[k], "notes[" + std::to_string(k) + "]", source);
    budget.Bytes(parts.notes[k].size(), "notes[" + std::to_string(k) + "]");
  }
  return Design(std::make_shared<const DesignParts>(std::move(parts)));
}

int Design::N() const { return parts_->N; }
int Design::c() const { return parts_->c; }
const std::vector<MatrixXd>& Design::encoders() const { return parts_->encoders; }
const std::vector<MatrixXd>& Design::decoders() const { return parts_->decoders; }
const Provenance& Design::provenance() const { return parts_->provenance; }
const std::optional<Figures>& Design::figures() const { return parts_->figures; }
const std::optional<Figures>& Design::exact_figures() const { return parts_->exact_figures; }
const std::vector<std::string>& Design::notes() const { return parts_->notes; }
const DesignParts& Design::parts() const { return *parts_; }

const MatrixXd& Design::encoder(int rank) const {
  if (rank < 0 || rank >= N()) {
    throw InvalidArgument("encoder rank " + std::to_string(rank) + " is outside [0, N) with N = " +
                          std::to_string(N()));
  }
  return parts_->encoders[rank];
}

const MatrixXd& Design::decoder(int rank) const {
  if (rank < 0 || rank >= N()) {
    throw InvalidArgument("decoder rank " + std::to_string(rank) + " is outside [0, N) with N = " +
                          std::to_string(N()));
  }
  return parts_->decoders[rank];
}

MatrixXd Design::window(int i, int j) const {
  if (i < 0 || i >= N() || j < 0 || j >= N() || i == j) {
    throw InvalidArgument("window(" + std::to_string(i) + ", " + std::to_string(j) +
                          "): expected ranks i != j in [0, N) with N = " + std::to_string(N()));
  }
  const int s = HopOffset(i, j, N());
  // Rows N-2+r-s for r = 0..c-1 lie in [0, L-1] because s is in [0, N-2].
  return parts_->encoders[i].middleRows(N() - 2 - s, c());
}

std::uint64_t Design::fingerprint() const {
  // docs/design-format.md: first 8 bytes (big-endian) of SHA-256 over
  // "cerar-fingerprint-v1\n", u32le N, u32le c, every E_i then every D_i as float64 LE.
  detail::Sha256 sha;
  sha.Update("cerar-fingerprint-v1\n");
  PutU32(sha, std::uint32_t(N()));
  PutU32(sha, std::uint32_t(c()));
  for (const auto& e : parts_->encoders) PutMatrix(sha, e);
  for (const auto& d : parts_->decoders) PutMatrix(sha, d);
  const auto digest = sha.Digest();
  std::uint64_t value = 0;
  for (int k = 0; k < 8; ++k) value = (value << 8) | digest[k];
  return value;
}

int HopOffset(int i, int j, int N) {
  if (N < 2) throw InvalidArgument("HopOffset: N = " + std::to_string(N) + ", expected N >= 2");
  if (i < 0 || i >= N || j < 0 || j >= N) {
    throw InvalidArgument("HopOffset: ranks i = " + std::to_string(i) + ", j = " +
                          std::to_string(j) + " must lie in [0, N) with N = " + std::to_string(N));
  }
  if (i == j) {
    throw InvalidArgument("HopOffset: i = j = " + std::to_string(i) +
                          "; a rank's window onto itself is not defined (PROTOCOL.md §4)");
  }
  // In 64 bits: (j - 1 - i) + N exceeds an int for N above INT_MAX / 2.
  const std::int64_t n = N;
  return static_cast<int>(((j - 1 - i) % n + n) % n);
}

}  // namespace cerar
