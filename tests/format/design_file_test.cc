// Design files: bit-exact round trip, and a corpus of damaged files each rejected with its message.
#include "cerar/format/design_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "canonical.h"
#include "cerar/errors.h"
#include "test_support.h"

namespace cerar {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing_support::RandomDesign;
using testing_support::RandomParts;
using testing_support::TempDir;

std::uint64_t Bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void ExpectBitsEqual(const MatrixXd& a, const MatrixXd& b, const std::string& name) {
  ASSERT_EQ(a.rows(), b.rows()) << name;
  ASSERT_EQ(a.cols(), b.cols()) << name;
  for (Eigen::Index r = 0; r < a.rows(); ++r) {
    for (Eigen::Index k = 0; k < a.cols(); ++k) {
      EXPECT_EQ(Bits(a(r, k)), Bits(b(r, k))) << name << "[" << r << "][" << k << "] " << a(r, k);
    }
  }
}

void ExpectBitsEqual(const std::vector<double>& a, const std::vector<double>& b,
                     const std::string& name) {
  ASSERT_EQ(a.size(), b.size()) << name;
  for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(Bits(a[k]), Bits(b[k])) << name << k;
}

void ExpectFiguresEqual(const std::optional<Figures>& a, const std::optional<Figures>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (!a) return;
  ExpectBitsEqual(std::vector<double>{a->err_op, a->err_rms, a->kappa_dec, a->kappa_enc},
                  std::vector<double>{b->err_op, b->err_rms, b->kappa_dec, b->kappa_enc}, "figures");
  ExpectBitsEqual(a->err_op_per_rank, b->err_op_per_rank, "err_op_per_rank");
  ExpectBitsEqual(a->err_rms_per_rank, b->err_rms_per_rank, "err_rms_per_rank");
  ExpectBitsEqual(a->kappa_dec_per_rank, b->kappa_dec_per_rank, "kappa_dec_per_rank");
  ExpectBitsEqual(a->kappa_enc_per_rank, b->kappa_enc_per_rank, "kappa_enc_per_rank");
  EXPECT_EQ(a->precision, b->precision);
  EXPECT_EQ(a->certified_digits, b->certified_digits);
  ASSERT_EQ(a->predicted_error.size(), b->predicted_error.size());
  for (const auto& [k, v] : a->predicted_error) EXPECT_EQ(Bits(v), Bits(b->predicted_error.at(k)));
}

void ExpectSameDesign(const Design& a, const Design& b) {
  ASSERT_EQ(a.N(), b.N());
  ASSERT_EQ(a.c(), b.c());
  for (int i = 0; i < a.N(); ++i) {
    ExpectBitsEqual(a.encoder(i), b.encoder(i), "E[" + std::to_string(i) + "]");
    ExpectBitsEqual(a.decoder(i), b.decoder(i), "D[" + std::to_string(i) + "]");
  }
  ExpectFiguresEqual(a.figures(), b.figures());
  ExpectFiguresEqual(a.exact_figures(), b.exact_figures());
  EXPECT_EQ(a.provenance().construction, b.provenance().construction);
  EXPECT_EQ(a.provenance().shift_invariant, b.provenance().shift_invariant);
  EXPECT_EQ(a.provenance().parameters, b.provenance().parameters);
  EXPECT_EQ(a.notes(), b.notes());
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
}

// Doubles that stress decimal round trips: random bit patterns (all exponents, subnormals
// included), 1/3, 1e-300, -0.0, extremes.
std::vector<double> HardDoubles(std::size_t count, std::uint64_t seed) {
  std::vector<double> v = {1.0 / 3,  1e-300, -0.0, 0.0, 0.1, -2.0 / 3, DBL_MAX, -DBL_MAX,
                           DBL_MIN, std::numeric_limits<double>::denorm_min(), 5e-324,
                           2.2250738585072009e-308 /* largest subnormal */, 1e300, 9007199254740993.0,
                           123456789012345678.0, std::nextafter(1.0, 2.0)};
  std::mt19937_64 rng(seed);
  while (v.size() < count) {
    std::uint64_t bits = rng();
    if (v.size() % 4 == 0) bits &= 0x800FFFFFFFFFFFFFull;  // subnormal
    const double x = std::bit_cast<double>(bits);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

struct Shape {
  int N, c;
};

class FileRoundTrip : public ::testing::TestWithParam<Shape> {};

INSTANTIATE_TEST_SUITE_P(Shapes, FileRoundTrip,
                         ::testing::Values(Shape{2, 1}, Shape{2, 2}, Shape{3, 2}, Shape{4, 3},
                                           Shape{4, 8}, Shape{5, 7}, Shape{8, 16}),
                         [](const auto& tp) {
                           return "N" + std::to_string(tp.param.N) + "_c" +
                                  std::to_string(tp.param.c);
                         });

TEST_P(FileRoundTrip, EveryEntryAndFigureBitExact) {
  const auto [N, c] = GetParam();
  DesignParts p = RandomParts(N, c, 99);
  const int L = c + N - 2;
  const auto values = HardDoubles(std::size_t(N) * (L * c + c * c) + 8 * N + 8, 1234 + N * c);
  std::size_t next = 0;
  for (auto& e : p.encoders) for (auto& x : e.reshaped()) x = values[next++];
  for (auto& d : p.decoders) for (auto& x : d.reshaped()) x = values[next++];
  auto figure = [&] { return std::abs(values[next++]); };
  Figures& f = *p.figures;
  f.err_op = figure();
  f.err_rms = figure();
  f.kappa_dec = std::numeric_limits<double>::infinity();
  f.kappa_enc = figure();
  for (int i = 0; i < N; ++i) {
    f.err_op_per_rank[i] = figure();
    f.err_rms_per_rank[i] = figure();
    f.kappa_dec_per_rank[i] = figure();
    f.kappa_enc_per_rank[i] = figure();
  }
  f.precision = "mp50";
  f.predicted_error = {{"float32", figure()}, {"bfloat16", figure()}};
  p.exact_figures = f;
  p.exact_figures->err_op = figure();
  p.exact_figures->predicted_error.clear();
  p.notes = {"rounding to float64 moves err_op by 3e-5", "unicode: ε → ∞, \"quoted\""};
  p.provenance.construction = "eps";
  p.provenance.shift_invariant = true;
  p.provenance.parameters = {{"eps", 1.0 / 3}, {"seed", 18446744073709551615ull},
                             {"offset", -7}, {"nested", {{"list", {1, 2.5, "x", nullptr, true}}}}};
  const Design original = Design::Create(p, "test");

  const std::string text = SerializeDesign(original);
  ExpectSameDesign(original, ParseDesign(text, "text"));

  TempDir dir;
  const std::string path = dir / "design.json";
  SaveDesign(original, path);
  const Design loaded = LoadDesign(path);
  ExpectSameDesign(original, loaded);
  EXPECT_EQ(SerializeDesign(loaded), text) << "serialisation is deterministic";
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"design.json"});
}

TEST(DesignFile, HeaderFieldsAndIntegrityFormat) {
  const json doc = json::parse(SerializeDesign(RandomDesign(4, 3, 2)));
  EXPECT_EQ(doc["format"], "cerar-design");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["N"], 4);
  EXPECT_EQ(doc["c"], 3);
  EXPECT_EQ(doc["L"], 5);
  const std::string integrity = doc["integrity"];
  ASSERT_EQ(integrity.size(), 7u + 64u);
  EXPECT_EQ(integrity.substr(0, 7), "sha256:");
  EXPECT_EQ(integrity, detail::IntegrityValue(doc));
}

// Version 2 only where a file uses what it adds: certified digits (docs/design-format.md).
TEST(DesignFile, CertifiedDigitsRoundTripInVersion2) {
  DesignParts p = RandomParts(4, 3, 5);
  p.figures->precision = "mp200";
  p.figures->certified_digits = {{"err_op", 15}, {"err_rms", 14}, {"kappa_dec", 10},
                                 {"kappa_enc", 0}};
  p.exact_figures = p.figures;
  p.exact_figures->certified_digits = {{"err_op", 11}};
  const Design original = Design::Create(p, "test");
  const std::string text = SerializeDesign(original);
  EXPECT_EQ(json::parse(text)["version"], 2);
  EXPECT_EQ(json::parse(text)["figures"]["certified_digits"]["kappa_dec"], 10);
  ExpectSameDesign(original, ParseDesign(text, "text"));
  p.figures->certified_digits.clear();
  p.exact_figures->certified_digits.clear();
  const std::string plain = SerializeDesign(Design::Create(p, "test"));
  EXPECT_EQ(json::parse(plain)["version"], 1);
  EXPECT_FALSE(json::parse(plain)["figures"].contains("certified_digits"));
  p.figures->certified_digits = {{"kappa", 3}};
  EXPECT_THROW(Design::Create(p, "test"), DesignError);
}

TEST(DesignFile, MissingFileAndDirectoryAreIoErrors) {
  TempDir dir;
  try {
    LoadDesign(dir / "absent.json");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("absent.json"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
  EXPECT_THROW(LoadDesign(dir.path()), IoError);
}

// ---- The corpus of bad files: each case damages a good file one way. ----

struct BadCase {
  std::string name;
  std::function<std::string(const std::string& good_text)> damage;
  std::vector<std::string> words;  // the message must contain each of these
};
void PrintTo(const BadCase& b, std::ostream* os) { *os << b.name; }

// Edits the parsed document and re-seals its integrity value, so the check under test is the
// structural one, not the integrity check.
std::function<std::string(const std::string&)> Edit(std::function<void(json&)> edit) {
  return [edit](const std::string& text) {
    json doc = json::parse(text);
    edit(doc);
    doc["integrity"] = detail::IntegrityValue(doc);
    return doc.dump();
  };
}

// Replaces the text of E[0]'s first row, e.g. by tokens that a JSON edit cannot produce.
std::function<std::string(const std::string&)> ReplaceFirstEncoderRow(std::string row) {
  return [row](const std::string& text) {
    const std::string old = json::parse(text)["encoders"][0][0].dump();
    std::string out = text;
    const auto at = out.find(old, out.find("\"encoders\""));
    return out.replace(at, old.size(), row);
  };
}

// N = 4, c = 3, L = 5 for the good file.
std::vector<BadCase> BadCases() {
  return {
      {"Empty", [](const std::string&) { return std::string("  \n"); }, {"empty"}},
      {"NotJson", [](const std::string&) { return std::string("hello, world"); },
       {"not valid JSON"}},
      {"Truncated", [](const std::string& t) { return t.substr(0, t.size() / 2); },
       {"not valid JSON", "truncated"}},
      {"TopLevelArray", [](const std::string&) { return std::string("[1, 2]"); },
       {"expected a JSON object"}},
      {"WrongFormatName", Edit([](json& d) { d["format"] = "cerar-report"; }),
       {"format", "\"cerar-report\"", "expected \"cerar-design\""}},
      {"MissingFormat", Edit([](json& d) { d.erase("format"); }), {"missing", "format"}},
      {"UnknownVersion", Edit([](json& d) { d["version"] = 3; }),
       {"version 3", "not supported", "versions 1 to 2"}},
      {"CertifiedDigitsInVersion1", Edit([](json& d) {
         d["figures"]["certified_digits"] = {{"err_op", 12}};
       }),
       {"figures.certified_digits needs format version 2"}},
      {"CertifiedDigitsUnknownFigure", Edit([](json& d) {
         d["version"] = 2;
         d["figures"]["certified_digits"] = {{"err_max", 12}};
       }),
       {"figures.certified_digits names \"err_max\""}},
      {"CertifiedDigitsNameWithControls", Edit([](json& d) {  // escaped, not sent to the tty
         d["version"] = 2;
         d["figures"]["certified_digits"] = {{"bad\n\x1b[31m", 3}};
       }),
       {"figures.certified_digits names \"bad\\n\\x1b[31m\""}},
      {"CertifiedDigitsNameWithControlsNotInteger", Edit([](json& d) {
         d["version"] = 2;
         d["figures"]["certified_digits"] = {{"bad\n\x1b[31m", 2.5}};
       }),
       {"figures.certified_digits[\"bad\\n\\x1b[31m\"]", "integer"}},
      {"CertifiedDigitsOutOfRange", Edit([](json& d) {
         d["version"] = 2;
         d["figures"]["certified_digits"] = {{"kappa_dec", 40}};
       }),
       {"figures.certified_digits[\"kappa_dec\"] = 40", "0 ... 17"}},
      {"CertifiedDigitsNotInteger", Edit([](json& d) {
         d["version"] = 2;
         d["figures"]["certified_digits"] = {{"err_rms", 12.5}};
       }),
       {"certified_digits[\"err_rms\"]", "integer"}},
      {"VersionNotInteger", Edit([](json& d) { d["version"] = "1"; }),
       {"version", "expected an integer"}},
      {"NIsOne", Edit([](json& d) { d["N"] = 1; }), {"N = 1", "N >= 2"}},
      {"CIsZero", Edit([](json& d) { d["c"] = 0; }), {"c = 0", "c >= 1"}},
      {"NIsBillion", Edit([](json& d) { d["N"] = 1000000000; }), {"N = 1000000000", "limit"}},
      {"NHuge", Edit([](json& d) { d["N"] = 18446744073709551615ull; }), {"N = ", "out of range"}},
      {"NNotInteger", Edit([](json& d) { d["N"] = 4.0; }), {"N is 4.0", "integer"}},
      {"WrongL", Edit([](json& d) { d["L"] = 6; }), {"L = 6", "expected 5 = c + N - 2"}},
      {"EncoderMissingRow", Edit([](json& d) { d["encoders"][3].erase(4); }),
       {"E[3] has 4 rows", "expected 5 = c + N - 2"}},
      {"EncoderExtraColumn", Edit([](json& d) { d["encoders"][1][2].push_back(0.5); }),
       {"E[1] row 2", "more than 3 columns", "expected 3 = c"}},
      {"DecoderWrongRows", Edit([](json& d) { d["decoders"][0].push_back({1.0, 2.0, 3.0}); }),
       {"D[0] has more than 3 rows", "expected 3 = c"}},
      {"TooFewDecoders", Edit([](json& d) { d["decoders"].erase(3); }),
       {"decoders has 3 matrices", "expected 4 = N"}},
      {"TooManyEncoders", Edit([](json& d) { d["encoders"].push_back(d["encoders"][0]); }),
       {"encoders has more than 4 matrices", "expected 4 = N"}},
      {"EncoderNotArray", Edit([](json& d) { d["encoders"][2] = 7; }),
       {"E[2] is 7", "expected an array"}},
      {"NullEntry", Edit([](json& d) { d["encoders"][0][1][2] = nullptr; }),
       {"E[0][1][2] is null", "finite number"}},
      {"StringEntry", Edit([](json& d) { d["decoders"][2][0][1] = "0.5"; }),
       {"D[2][0][1] is the string \"0.5\"", "finite number"}},
      {"NaNToken", ReplaceFirstEncoderRow("[NaN, 0.0, 0.0]"), {"not valid JSON"}},
      {"OverflowingNumber", ReplaceFirstEncoderRow("[1e400, 0.0, 0.0]"),
       {"1e400", "overflow"}},
      {"BadIntegrityValue", [](const std::string& t) {
         json doc = json::parse(t);
         doc["integrity"] = "sha256:zz";
         return doc.dump();
       }, {"integrity", "64 hex digits"}},
      {"MissingIntegrity", [](const std::string& t) {
         json doc = json::parse(t);
         doc.erase("integrity");
         return doc.dump();
       }, {"missing member \"integrity\""}},
      {"EditedNumberOldIntegrity", [](const std::string& t) {
         json doc = json::parse(t);
         doc["decoders"][1][2][0] = doc["decoders"][1][2][0].get<double>() * (1 + 1e-15);
         return doc.dump();
       }, {"integrity value does not match", "edited"}},
      {"EditedFigureOldIntegrity", [](const std::string& t) {
         json doc = json::parse(t);
         doc["figures"]["err_op"] = 1e-9;
         return doc.dump();
       }, {"integrity value does not match"}},
      {"EditedProvenanceOldIntegrity", [](const std::string& t) {
         json doc = json::parse(t);
         doc["provenance"]["parameters"]["seed"] = 2;
         return doc.dump();
       }, {"integrity value does not match"}},
      {"UnknownMember", Edit([](json& d) { d["comment"] = "hi"; }),
       {"unknown member \"comment\""}},
      {"FigurePerRankWrongSize", Edit([](json& d) { d["figures"]["err_op_per_rank"].erase(0); }),
       {"figures.err_op_per_rank", "3 entries", "expected 4 = N"}},
      {"FigureNegative", Edit([](json& d) { d["figures"]["kappa_enc"] = -2.0; }),
       {"figures.kappa_enc", "-2", ">= 0"}},
      {"FigureNull", Edit([](json& d) { d["figures"]["err_rms"] = nullptr; }),
       {"figures.err_rms is null"}},
      {"FigureMissingField", Edit([](json& d) { d["figures"].erase("precision"); }),
       {"figures", "missing member \"precision\""}},
      {"ProvenanceNotObject", Edit([](json& d) { d["provenance"] = "eps"; }),
       {"provenance is the string \"eps\"", "expected an object"}},
      {"NoteNotString", Edit([](json& d) { d["notes"] = {1}; }),
       {"notes[0] is 1", "expected a string"}},
  };
}

class BadFile : public ::testing::TestWithParam<BadCase> {};

INSTANTIATE_TEST_SUITE_P(Corpus, BadFile, ::testing::ValuesIn(BadCases()),
                         [](const auto& tp) { return tp.param.name; });

TEST_P(BadFile, RejectedWithMessageNamingFileAndProblem) {
  const BadCase& bad = GetParam();
  const std::string good = SerializeDesign(RandomDesign(4, 3, 8));
  ASSERT_NO_THROW(ParseDesign(good, "good"));
  TempDir dir;
  const std::string path = dir / (bad.name + ".json");
  {
    std::ofstream out(path, std::ios::binary);
    out << bad.damage(good);
  }
  try {
    LoadDesign(path);
    FAIL() << "loaded a damaged file";
  } catch (const DesignError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("design file " + path + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
    for (const auto& w : bad.words) EXPECT_THAT(message, HasSubstr(w)) << message;
  }
}

}  // namespace
}  // namespace cerar
