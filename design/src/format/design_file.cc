// Design files, format version 1 (docs/design-format.md): parse + validate, serialise, load, save.
#include "cerar/format/design_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "bounded_json.h"
#include "canonical.h"
#include "cerar/format/design_parts.h"
#include "cerar/errors.h"
#include "cerar/format/printable.h"
#include "checks.h"

namespace cerar {
namespace {

using nlohmann::json;

constexpr const char* kFormatName = "cerar-design";

// Reading one document; every failure names the source and the JSON path of the problem.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void Fail(const std::string& what) const { throw DesignError(source_ + ": " + what); }

  void CheckKeys(const json& object, const std::string& where, const std::set<std::string>& allowed,
                 const std::set<std::string>& required) const {
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (!allowed.count(it.key())) {
        Fail((where.empty() ? "" : where + " has ") + "unknown member \"" + Printable(it.key()) +
             "\"" +
             (where.empty() ? " at the top level" : ""));
      }
    }
    for (const auto& key : required) {
      if (!object.contains(key)) {
        Fail((where.empty() ? "" : where + ": ") + "missing member \"" + key + "\"");
      }
    }
  }

  static std::string Describe(const json& j) {
    if (j.is_string()) return "the string " + Printable(j.dump());
    if (j.is_number() || j.is_boolean() || j.is_null()) return j.dump();
    return std::string("a JSON ") + j.type_name();
  }

  std::int64_t Integer(const json& j, const std::string& name) const {
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      if (v > std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
        Fail(name + " = " + std::to_string(v) + " is out of range");
      }
      return std::int64_t(v);
    }
    if (j.is_number_integer()) return j.get<std::int64_t>();
    Fail(name + " is " + Describe(j) + ", expected an integer");
  }

  const std::string& String(const json& j, const std::string& name) const {
    if (!j.is_string()) Fail(name + " is " + Describe(j) + ", expected a string");
    return j.get_ref<const std::string&>();
  }

  double Number(const json& j, const std::string& name) const {
    if (!j.is_number()) Fail(name + " is " + Describe(j) + ", expected a finite number");
    const double v = j.get<double>();
    if (!std::isfinite(v)) Fail(name + " = " + detail::NumberText(v) + ", expected a finite number");
    return v;
  }

  // Figures may be +inf (a singular matrix's condition number), written as the string "inf".
  double Figure(const json& j, const std::string& name) const {
    if (j.is_string() && j.get_ref<const std::string&>() == "inf") {
      return std::numeric_limits<double>::infinity();
    }
    if (!j.is_number()) Fail(name + " is " + Describe(j) + ", expected a number or \"inf\"");
    return Number(j, name);
  }

  const json& Array(const json& j, const std::string& name, std::size_t size,
                    const std::string& size_name, const std::string& rule) const {
    if (!j.is_array()) Fail(name + " is " + Describe(j) + ", expected an array");
    if (j.size() != size) {
      Fail(name + " has " + std::to_string(j.size()) + " " + size_name + ", expected " +
           std::to_string(size) + " = " + rule);
    }
    return j;
  }

  MatrixXd Matrix(const json& j, const std::string& name, int rows, const std::string& rows_rule,
                  int cols, const std::string& cols_rule) const {
    Array(j, name, std::size_t(rows), "rows", rows_rule);
    MatrixXd m(rows, cols);
    for (int r = 0; r < rows; ++r) {
      const std::string row_name = name + " row " + std::to_string(r);
      Array(j[r], row_name, std::size_t(cols), "columns", cols_rule);
      for (int k = 0; k < cols; ++k) {
        m(r, k) = Number(j[r][k], name + "[" + std::to_string(r) + "][" + std::to_string(k) + "]");
      }
    }
    return m;
  }

  std::vector<double> PerRank(const json& j, const std::string& name) const {
    if (!j.is_array()) Fail(name + " is " + Describe(j) + ", expected an array");
    std::vector<double> values;
    values.reserve(j.size());
    for (std::size_t k = 0; k < j.size(); ++k) {
      values.push_back(Figure(j[k], name + "[" + std::to_string(k) + "]"));
    }
    return values;
  }

  Figures ReadFigures(const json& j, const std::string& name) const {
    if (!j.is_object()) Fail(name + " is " + Describe(j) + ", expected an object");
    static const std::set<std::string> kKeys = {
        "err_op", "err_rms", "kappa_dec", "kappa_enc", "err_op_per_rank", "err_rms_per_rank",
        "kappa_dec_per_rank", "kappa_enc_per_rank", "precision", "predicted_error"};
    static const std::set<std::string> kAllowedKeys = [] {
      std::set<std::string> keys = kKeys;
      keys.insert("certified_digits");  // optional: certified high-precision figures only
      return keys;
    }();
    CheckKeys(j, name, kAllowedKeys, kKeys);
    Figures f;
    f.err_op = Figure(j["err_op"], name + ".err_op");
    f.err_rms = Figure(j["err_rms"], name + ".err_rms");
    f.kappa_dec = Figure(j["kappa_dec"], name + ".kappa_dec");
    f.kappa_enc = Figure(j["kappa_enc"], name + ".kappa_enc");
    f.err_op_per_rank = PerRank(j["err_op_per_rank"], name + ".err_op_per_rank");
    f.err_rms_per_rank = PerRank(j["err_rms_per_rank"], name + ".err_rms_per_rank");
    f.kappa_dec_per_rank = PerRank(j["kappa_dec_per_rank"], name + ".kappa_dec_per_rank");
    f.kappa_enc_per_rank = PerRank(j["kappa_enc_per_rank"], name + ".kappa_enc_per_rank");
    f.precision = String(j["precision"], name + ".precision");
    const json& predicted = j["predicted_error"];
    if (!predicted.is_object()) {
      Fail(name + ".predicted_error is " + Describe(predicted) + ", expected an object");
    }
    for (auto it = predicted.begin(); it != predicted.end(); ++it) {
      f.predicted_error[it.key()] =
          Figure(it.value(), name + ".predicted_error[\"" + Printable(it.key()) + "\"]");
    }
    if (j.contains("certified_digits")) {
      const json& certified = j["certified_digits"];
      const std::string where = name + ".certified_digits";
      if (version_ < 2) Fail(where + " needs format version 2, the file says " + std::to_string(version_));
      if (!certified.is_object()) {
        Fail(where + " is " + Describe(certified) + ", expected an object");
      }
      for (auto it = certified.begin(); it != certified.end(); ++it) {
        const std::int64_t digits =
            Integer(it.value(), where + "[\"" + Printable(it.key()) + "\"]");
        if (digits < 0 || digits > 17) {
          Fail(where + "[\"" + Printable(it.key()) + "\"] = " + std::to_string(digits) +
               ", expected 0 ... 17");
        }
        f.certified_digits[it.key()] = int(digits);
      }
    }
    return f;
  }

  Design Read(const json& doc) const {
    if (!doc.is_object()) Fail("top level is " + Describe(doc) + ", expected a JSON object");
    if (!doc.contains("format")) Fail("missing member \"format\"; not a CERAR design file");
    const json& format = doc["format"];
    if (!format.is_string() || format.get_ref<const std::string&>() != kFormatName) {
      Fail("format is " + Describe(format) + ", expected \"" + kFormatName + "\"");
    }
    if (!doc.contains("version")) Fail("missing member \"version\"");
    const std::int64_t version = Integer(doc["version"], "version");
    if (version < kOldestDesignFormatVersion || version > kDesignFormatVersion) {
      Fail("format version " + std::to_string(version) + " is not supported (this build reads " +
           "versions " + std::to_string(kOldestDesignFormatVersion) + " to " +
           std::to_string(kDesignFormatVersion) + ")");
    }
    version_ = version;
    static const std::set<std::string> kAllowed = {
        "format", "version", "N", "c", "L", "provenance", "figures", "exact_figures", "notes",
        "encoders", "decoders", "integrity"};
    static const std::set<std::string> kRequired = {
        "format", "version", "N", "c", "L", "provenance", "notes", "encoders", "decoders",
        "integrity"};
    CheckKeys(doc, "", kAllowed, kRequired);

    // Sizes first, before any matrix is allocated.
    const std::int64_t N64 = Integer(doc["N"], "N");
    const std::int64_t c64 = Integer(doc["c"], "c");
    detail::CheckDesignSize(N64, c64, source_);
    const int N = int(N64), c = int(c64), L = c + N - 2;
    const std::int64_t file_L = Integer(doc["L"], "L");
    if (file_L != L) {
      Fail("L = " + std::to_string(file_L) + ", expected " + std::to_string(L) + " = c + N - 2");
    }

    DesignParts parts;
    parts.N = N;
    parts.c = c;
    const json& encoders = Array(doc["encoders"], "encoders", std::size_t(N), "matrices", "N");
    const json& decoders = Array(doc["decoders"], "decoders", std::size_t(N), "matrices", "N");
    for (int i = 0; i < N; ++i) {
      parts.encoders.push_back(
          Matrix(encoders[i], "E[" + std::to_string(i) + "]", L, "c + N - 2", c, "c"));
    }
    for (int i = 0; i < N; ++i) {
      parts.decoders.push_back(Matrix(decoders[i], "D[" + std::to_string(i) + "]", c, "c", c, "c"));
    }

    const json& provenance = doc["provenance"];
    if (!provenance.is_object()) {
      Fail("provenance is " + Describe(provenance) + ", expected an object");
    }
    static const std::set<std::string> kProvenance = {"construction", "shift_invariant",
                                                      "parameters"};
    CheckKeys(provenance, "provenance", kProvenance, kProvenance);
    parts.provenance.construction = String(provenance["construction"], "provenance.construction");
    if (!provenance["shift_invariant"].is_boolean()) {
      Fail("provenance.shift_invariant is " + Describe(provenance["shift_invariant"]) +
           ", expected true or false");
    }
    parts.provenance.shift_invariant = provenance["shift_invariant"].get<bool>();
    parts.provenance.parameters = provenance["parameters"];

    if (doc.contains("figures")) parts.figures = ReadFigures(doc["figures"], "figures");
    if (doc.contains("exact_figures")) {
      parts.exact_figures = ReadFigures(doc["exact_figures"], "exact_figures");
    }
    const json& notes = doc["notes"];
    if (!notes.is_array()) Fail("notes is " + Describe(notes) + ", expected an array of strings");
    for (std::size_t k = 0; k < notes.size(); ++k) {
      parts.notes.push_back(String(notes[k], "notes[" + std::to_string(k) + "]"));
    }

    // Integrity last: the shape checks above give the more useful message for a damaged file.
    const std::string& stored = String(doc["integrity"], "integrity");
    const std::string computed = detail::IntegrityValue(doc);
    if (stored.rfind("sha256:", 0) != 0 || stored.size() != computed.size()) {
      Fail("integrity is \"" + Printable(stored) +
           "\", expected \"sha256:\" followed by 64 hex digits");
    }
    if (stored != computed) {
      Fail("integrity value does not match the contents (file edited or corrupted): stored " +
           Printable(stored) + ", computed " + computed);
    }
    return Design::Create(std::move(parts), source_);
  }

 private:
  std::string source_;
  mutable std::int64_t version_ = kDesignFormatVersion;
};

json PerRankJson(const std::vector<double>& values) {
  json a = json::array();
  for (double v : values) a.push_back(FigureJson(v));
  return a;
}

json FiguresJson(const Figures& f) {
  json j = json::object();
  j["err_op"] = FigureJson(f.err_op);
  j["err_rms"] = FigureJson(f.err_rms);
  j["kappa_dec"] = FigureJson(f.kappa_dec);
  j["kappa_enc"] = FigureJson(f.kappa_enc);
  j["err_op_per_rank"] = PerRankJson(f.err_op_per_rank);
  j["err_rms_per_rank"] = PerRankJson(f.err_rms_per_rank);
  j["kappa_dec_per_rank"] = PerRankJson(f.kappa_dec_per_rank);
  j["kappa_enc_per_rank"] = PerRankJson(f.kappa_enc_per_rank);
  j["precision"] = f.precision;
  j["predicted_error"] = json::object();
  for (const auto& [arithmetic, value] : f.predicted_error) {
    j["predicted_error"][arithmetic] = FigureJson(value);
  }
  if (!f.certified_digits.empty()) j["certified_digits"] = f.certified_digits;
  return j;
}

json MatrixJson(const MatrixXd& m) {
  json rows = json::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    json row = json::array();
    for (Eigen::Index k = 0; k < m.cols(); ++k) row.push_back(m(r, k));
    rows.push_back(std::move(row));
  }
  return rows;
}

// One matrix row per line; every other member on one line, in a fixed, readable order.
void AppendMatrices(std::string& out, const json& matrices) {
  out += "[\n";
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    out += "    [\n";
    const json& m = matrices[i];
    for (std::size_t r = 0; r < m.size(); ++r) {
      out += "      " + m[r].dump() + (r + 1 < m.size() ? ",\n" : "\n");
    }
    out += i + 1 < matrices.size() ? "    ],\n" : "    ]\n";
  }
  out += "  ]";
}

// Runs `parse` (a bounded parse, bounded_json.h) and turns nlohmann's parse errors into one line.
template <class Parse>
json ParseDocument(const Reader& reader, const Parse& parse) {
  try {
    return parse();
  } catch (const json::exception& e) {
    // nlohmann's text starts with "[json.exception.parse_error.101] "; keep only the reason.
    std::string reason = e.what();
    if (const auto bracket = reason.find("] "); reason.rfind("[json.", 0) == 0 &&
                                                bracket != std::string::npos) {
      reason = reason.substr(bracket + 2);
    }
    reader.Fail("not valid JSON (truncated or corrupted?): " + Printable(reason));
  }
}

// An open file's bytes as the input iterators nlohmann's parser reads, in blocks: the parser
// stops at the first byte it cannot use, so a file of garbage is rejected after one block, and
// reading more than `limit` bytes throws (a file may grow after its size was checked).
class FileBytes {
 public:
  FileBytes(int fd, std::uint64_t limit, std::string source)
      : fd_(fd), limit_(limit), source_(std::move(source)) {}
  ~FileBytes() { ::close(fd_); }
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  struct Iterator {
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;
    FileBytes* in = nullptr;  // null: the end
    reference operator*() const { return in->block_[in->at_]; }
    Iterator& operator++() {
      ++in->at_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    bool AtEnd() const { return in == nullptr || in->AtEnd(); }
    bool operator==(const Iterator& other) const { return AtEnd() == other.AtEnd(); }
    bool operator!=(const Iterator& other) const { return !(*this == other); }
  };
  Iterator begin() { return Iterator{this}; }
  static Iterator end() { return Iterator{}; }
  bool only_blank() const { return only_blank_; }
  // Offset of the first NUL byte read (nlohmann's parser stops there as if the input ended).
  std::optional<std::uint64_t> first_nul() const { return first_nul_; }

 private:
  bool AtEnd() {
    if (at_ < size_) return false;
    at_ = size_ = 0;
    ssize_t n;
    do {
      n = ::read(fd_, block_, sizeof block_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) throw IoError(source_ + ": read failed (" + std::strerror(errno) + ")");
    size_ = std::size_t(n);
    total_ += size_;
    if (total_ > limit_) {
      throw DesignError(source_ + ": larger than the limit of " + std::to_string(limit_) +
                        " bytes (raise it with LoadOptions::max_file_bytes, cerar --max-file-mib)");
    }
    if (!first_nul_) {
      if (const void* nul = std::memchr(block_, 0, size_)) {
        first_nul_ = total_ - size_ + std::uint64_t(static_cast<const char*>(nul) - block_);
      }
    }
    for (std::size_t k = 0; only_blank_ && k < size_; ++k) {
      only_blank_ = std::strchr(" \t\r\n", block_[k]) != nullptr && block_[k] != 0;
    }
    return size_ == 0;
  }

  int fd_;
  std::uint64_t limit_;
  std::string source_;
  char block_[1 << 16];
  std::size_t at_ = 0, size_ = 0;
  std::uint64_t total_ = 0;
  bool only_blank_ = true;
  std::optional<std::uint64_t> first_nul_;
};

}  // namespace

json FigureJson(double value) {
  if (std::isinf(value) && value > 0) return "inf";
  return value;
}

Design ParseDesign(const std::string& text, const std::string& source) {
  Reader reader(source);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) reader.Fail("file is empty");
  // nlohmann's parser takes a NUL byte for the end of the input: what follows would be ignored
  // here and rejected by other readers (Python's json).
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    reader.Fail("NUL byte at offset " + std::to_string(nul) + "; a design file is UTF-8 text");
  }
  return reader.Read(ParseDocument(reader, [&] { return detail::ParseBoundedJson(source, text); }));
}

std::string SerializeDesign(const Design& design) {
  const DesignParts& p = design.parts();
  json doc = json::object();
  doc["format"] = kFormatName;
  // The oldest version that expresses the file (docs/design-format.md, Versioning).
  const bool certified = (p.figures && !p.figures->certified_digits.empty()) ||
                         (p.exact_figures && !p.exact_figures->certified_digits.empty());
  doc["version"] = certified ? kDesignFormatVersion : kOldestDesignFormatVersion;
  doc["N"] = p.N;
  doc["c"] = p.c;
  doc["L"] = design.L();
  doc["provenance"] = {{"construction", p.provenance.construction},
                       {"shift_invariant", p.provenance.shift_invariant},
                       {"parameters", p.provenance.parameters}};
  if (p.figures) doc["figures"] = FiguresJson(*p.figures);
  if (p.exact_figures) doc["exact_figures"] = FiguresJson(*p.exact_figures);
  doc["notes"] = p.notes;
  doc["encoders"] = json::array();
  for (const auto& e : p.encoders) doc["encoders"].push_back(MatrixJson(e));
  doc["decoders"] = json::array();
  for (const auto& d : p.decoders) doc["decoders"].push_back(MatrixJson(d));
  const std::string integrity = detail::IntegrityValue(doc);

  std::string out = "{\n";
  for (const char* key : {"format", "version", "N", "c", "L", "provenance", "figures",
                          "exact_figures", "notes"}) {
    if (doc.contains(key)) out += "  \"" + std::string(key) + "\": " + doc[key].dump() + ",\n";
  }
  out += "  \"encoders\": ";
  AppendMatrices(out, doc["encoders"]);
  out += ",\n  \"decoders\": ";
  AppendMatrices(out, doc["decoders"]);
  out += ",\n  \"integrity\": \"" + integrity + "\"\n}\n";
  return out;
}

Design LoadDesign(const std::string& path, const LoadOptions& options) {
  const std::string source = "design file " + Printable(path, 1024);
  // open() would stop at the NUL and read another file than the one named.
  if (path.find('\0') != std::string::npos)
    throw IoError(source + ": a path with a NUL byte names no file");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below as not regular.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError(source + ": cannot open (" + std::strerror(errno) + ")");
  auto bytes = std::make_unique<FileBytes>(fd, options.max_file_bytes, source);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    throw IoError(source + ": cannot stat (" + std::strerror(errno) + ")");
  }
  if (S_ISDIR(info.st_mode)) throw IoError(source + ": is a directory, expected a file");
  if (!S_ISREG(info.st_mode)) throw IoError(source + ": is not a regular file");
  if (std::uint64_t(info.st_size) > options.max_file_bytes) {
    throw DesignError(source + ": " + std::to_string(info.st_size) +
                      " bytes, above the limit of " + std::to_string(options.max_file_bytes) +
                      " (raise it with LoadOptions::max_file_bytes, cerar --max-file-mib)");
  }
  Reader reader(source);
  if (info.st_size == 0) reader.Fail("file is empty");
  json doc = ParseDocument(reader, [&] {
    try {
      return detail::ParseBoundedJson(source, bytes->begin(), FileBytes::end());
    } catch (const json::exception&) {
      if (bytes->only_blank()) reader.Fail("file is empty");
      throw;
    }
  });
  if (bytes->first_nul()) {
    reader.Fail("NUL byte at offset " + std::to_string(*bytes->first_nul()) +
                "; a design file is UTF-8 text");
  }
  bytes.reset();
  return reader.Read(doc);
}

void SaveDesign(const Design& design, const std::string& path, Replace replace) {
  WriteFileAtomically(path, SerializeDesign(design), replace);
}

}  // namespace cerar
