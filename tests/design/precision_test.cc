// The precision ladder and certified digits (docs/error-model.md): ill-conditioned designs
// against independent high-precision values, the ladder's messages, float64 refusal, and
// Validate re-deriving every recorded figure of a re-signed file.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "cerar/format/design_file.h"
#include "cerar/errors.h"
#include "test_support.h"

namespace cerar::design::test {
namespace {

// ---- vandermonde N = 4, eps = 1e-2: kappa 1e26 ... 1e60 ------------------------------------
//
// Reference values of the exact construction from scripts/reference-figures.py (mpmath, normal
// equations and symmetric eigenvalues, independent of this library), identical to 20 digits at
// 300 and 600 digits:  python3 scripts/reference-figures.py vandermonde 4 C 0.01 300,600
struct Reference {
  int c;
  double err_op, err_rms, kappa_dec;
};

class Vandermonde : public testing::TestWithParam<Reference> {};

TEST_P(Vandermonde, ExactFiguresAreCertifiedAndRight) {
  const Reference ref = GetParam();
  const Design d =
      Make(Construction::kVandermonde, 4, ref.c, 1e-2, Precision::kAuto, kDefaultMaxDigits);
  // Rounding E and D to float64 destroys such a design: the exact figures are recorded beside.
  ASSERT_TRUE(d.exact_figures().has_value());
  const Figures& e = *d.exact_figures();
  EXPECT_NE(e.precision, "float64");
  EXPECT_NEAR(e.err_op, ref.err_op, 1e-6 * ref.err_op);
  EXPECT_NEAR(e.err_rms, ref.err_rms, 1e-6 * ref.err_rms);
  ASSERT_TRUE(std::isfinite(e.kappa_dec));
  EXPECT_NEAR(e.kappa_dec, ref.kappa_dec, 1e-2 * ref.kappa_dec);
  // Certified: every figure, stored and exact, agrees between two precisions to >= 10 digits,
  // and the values indeed have them.
  for (const Figures* f : {&*d.figures(), &e}) {
    ASSERT_EQ(f->certified_digits.size(), 4u) << f->precision;
    for (const auto& [name, digits] : f->certified_digits) EXPECT_GE(digits, 10) << name;
  }
  EXPECT_NEAR(e.err_op, ref.err_op, std::pow(10.0, -e.certified_digits.at("err_op")) * ref.err_op);
  EXPECT_NEAR(e.kappa_dec, ref.kappa_dec,
              std::pow(10.0, -e.certified_digits.at("kappa_dec")) * ref.kappa_dec);
  const nlohmann::json& p = d.provenance().parameters;
  EXPECT_EQ(p.at("precision"), d.figures()->precision);
  EXPECT_GE(p.at("certified_digits").get<int>(), 10);
  EXPECT_TRUE(p.contains("certified_against"));
}

INSTANTIATE_TEST_SUITE_P(
    N4Eps1e2, Vandermonde,
    testing::Values(Reference{11, 0.03269521046993029939, 0.011546150311664468714,
                              1.0336024940944806631e+26},
                    Reference{16, 0.032874339215044454608, 0.011546150311664468714,
                              1.1578681632446351364e+39},
                    Reference{20, 0.032932211151626628057, 0.011546150311664468714,
                              3.1326142536772480197e+49},
                    Reference{24, 0.032963662710189945568, 0.011546150311664468714,
                              8.400093372789847283e+59}),
    [](const testing::TestParamInfo<Reference>& p) { return "c" + std::to_string(p.param.c); });

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const NumericalError& e) {
    return e.what();
  }
  return "";
}

TEST(Ladder, TooFewDigitsIsIllConditionedNeverSingular) {
  // c = 24 (kappa 8.4e59): 100 digits resolve the windows but cannot certify them.
  ConstructionOptions o;
  o.construction = Construction::kVandermonde;
  o.N = 4;
  o.c = 24;
  o.eps = 1e-2;
  o.max_digits = 100;
  const std::string what = MessageOf([&] { MakeConstruction(o); });
  EXPECT_NE(what.find("too ill-conditioned for 100 digits"), std::string::npos) << what;
  EXPECT_NE(what.find("raise the digit limit to 200 (cerar --max-digits, Python max_digits)"), std::string::npos) << what;
  EXPECT_NE(what.find("kappa_dec ≈ "), std::string::npos) << what;
  EXPECT_EQ(what.find("singular"), std::string::npos) << what;
}

TEST(Ladder, SingularOnlyWhenRankDeficientInEveryPrecision) {
  // Encoders of rank 1 built from small integers: exactly singular Gram matrices.
  const int N = 3, c = 4;
  std::vector<MatrixXd> E = RandomEncoders(N, c, 5);
  const Eigen::RowVectorXd b = E[0].row(0).array().round() + 5;
  for (auto& m : E) m = (m.col(0).array().round() + 0.5).matrix() * b;
  const std::string what =
      MessageOf([&] { MakeFromEncoders(N, c, E, Provenance{}, Precision::kMp50, 200); });
  EXPECT_NE(what.find("singular in every precision tried (mp50, mp100, mp200)"),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("ill-conditioned"), std::string::npos) << what;
}

TEST(Ladder, OneRungIsUncertified) {
  const Design d = [] {
    ConstructionOptions o;
    o.N = 4;
    o.c = 8;
    o.precision = Precision::kMp50;
    o.max_digits = 50;
    return MakeConstruction(o);
  }();
  EXPECT_EQ(d.figures()->precision, "mp50");
  EXPECT_TRUE(d.figures()->certified_digits.empty());
  EXPECT_FALSE(d.provenance().parameters.contains("certified_digits"));
  EXPECT_THROW(Analyse(d, Precision::kMp50, 49), InvalidArgument);
}

TEST(Ladder, AgreeingDigits) {
  EXPECT_EQ(AgreeingDigits(1.0, 1.0, 0), 15);
  EXPECT_EQ(AgreeingDigits(1.0, 1.0 + 2e-7, 0), 6);  // 2e-7 relative: 6 full digits
  EXPECT_EQ(AgreeingDigits(1.0, 1.0 + 3e-11, 0), 10);
  EXPECT_EQ(AgreeingDigits(1.0, 2.0, 0), 0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(AgreeingDigits(inf, inf, 0), 15);
  EXPECT_EQ(AgreeingDigits(inf, 1e300, 0), 0);
  // Below the zero level the difference is measured against it: exact designs' noise.
  EXPECT_EQ(AgreeingDigits(1e-50, 1e-100, 1e-30), 15);
  EXPECT_EQ(AgreeingDigits(1e-50, 1e-100, 0), 0);
}

TEST(Ladder, MpFiguresOfAWellConditionedDesignAreCertifiedTo15Digits) {
  const Design d = Make(Construction::kEps, 4, 8, 1e-3, Precision::kMp50, kDefaultMaxDigits);
  const Figures& f = *d.figures();
  ASSERT_EQ(f.certified_digits.size(), 4u);
  for (const auto& [name, digits] : f.certified_digits) EXPECT_EQ(digits, 15) << name;
  const Figures again = Analyse(d, Precision::kMp50);
  EXPECT_EQ(again.certified_digits.size(), 4u);
  EXPECT_NEAR(again.err_op, f.err_op, 1e-15 * f.err_op);
}

// ---- float64: refused where it cannot be trusted ---------------------------------------------

TEST(Float64, RefusesUntrustedDesignsNamingRankAndPrecision) {
  const std::string what = MessageOf(
      [] { Make(Construction::kVandermonde, 4, 11, 1e-2, Precision::kFloat64); });
  EXPECT_NE(what.find("float64 cannot"), std::string::npos) << what;
  EXPECT_NE(what.find(" of rank "), std::string::npos) << what;
  EXPECT_NE(what.find("--precision auto or mp"), std::string::npos) << what;
  EXPECT_NE(what.find("eps = 0.01"), std::string::npos) << what;  // as a user writes it
  // PROTOCOL.md §7's vandermonde row: kappa u = 1e-3, 9 % of err_rms: refused too.
  EXPECT_NE(MessageOf([] {
              Make(Construction::kVandermonde, 4, 6, 1e-2, Precision::kFloat64);
            }).find("more than 1 % of err_rms = 0.0115"),
            std::string::npos);
  // eps N = 4, c = 8, eps = 1e-3 (kappa u = 1.6e-13): kept.
  EXPECT_NO_THROW(Make(Construction::kEps, 4, 8, 1e-3, Precision::kFloat64));
}

// The basis of the refusal rule: where float64 is kept, its error figures are within a few
// kappa u of the certified ones and its condition numbers within a few kappa u relative; past
// the rule (kappa u above 1e-2 of err_rms) they would not be.
TEST(Float64, KeptFiguresAreWithinAFewKappaU) {
  const double u = 0x1p-53;
  struct Case {
    int N, c;
    double eps;
  };
  for (const Case& k : {Case{4, 8, 1e-5}, Case{4, 8, 1e-6}, Case{4, 12, 1e-4}, Case{4, 16, 1e-3},
                        Case{8, 24, 1e-4}}) {
    const Figures f = *Make(Construction::kEps, k.N, k.c, k.eps, Precision::kFloat64).figures();
    const Figures g = *Make(Construction::kEps, k.N, k.c, k.eps, Precision::kMp50).figures();
    const double ku = f.kappa_dec * u;
    EXPECT_LE(std::abs(f.err_op - g.err_op), 5 * ku) << k.N << " " << k.c << " " << k.eps;
    EXPECT_LE(std::abs(f.err_rms - g.err_rms), 5 * ku) << k.N << " " << k.c << " " << k.eps;
    EXPECT_LE(std::abs(f.kappa_dec / g.kappa_dec - 1), 5 * ku) << k.N << " " << k.c;
    EXPECT_LE(ku, 1e-2 * f.err_rms);  // kept by the rule
  }
  // Past the rule: eps = 1e-7 at N = 4, c = 12 (kappa u = 8.8e-3 but err_rms 1.3e-7): refused,
  // and rightly: float64 gets err_op 2e-2 against the true 3.3e-7.
  const std::string what = MessageOf(
      [] { Make(Construction::kEps, 4, 12, 1e-7, Precision::kFloat64); });
  EXPECT_NE(what.find("more than 1 % of err_rms"), std::string::npos) << what;
}

TEST(Messages, NumbersAsAUserWritesThem) {
  try {
    Sweep(Construction::kEps, 4, 8, -1e-8, 1e-1, 3, Precision::kFloat64);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("[-1e-08, 0.1]"), std::string::npos) << e.what();
  }
}

// ---- Validate: every recorded figure, after re-signing --------------------------------------

Design Resigned(const DesignParts& parts) {
  return ParseDesign(SerializeDesign(Design::Create(parts, "falsified")), "re-signed file");
}

std::string FirstDiffering(const Validation& v) {
  for (const FigureCheck& c : v.checks)
    if (!c.agree) return c.name;
  return "";
}

TEST(Validate, AcceptsWhatTheToolkitWrote) {
  for (const Design& d :
       {Make(Construction::kEps, 4, 8, 1e-3),  // float64
        Make(Construction::kEps, 4, 8, 1e-3, Precision::kMp50, kDefaultMaxDigits),
        Make(Construction::kVandermonde, 4, 8, 1e-2, Precision::kAuto, kDefaultMaxDigits)}) {
    const Validation v = Validate(Resigned(d.parts()));
    EXPECT_TRUE(v.ok()) << FirstDiffering(v);
    EXPECT_EQ(v.derived_exact.has_value(), d.exact_figures().has_value());
    // 4 headline + 4 per-rank + 6 predicted errors (float32, float64, bfloat16,
    // float32+acc64, float32+acc64+feedback, float32+state64), and the same 8 for exact figures.
    EXPECT_EQ(v.checks.size(), d.exact_figures() ? 22u : 14u);
  }
}

TEST(Validate, FailsOnAnyFalsifiedFigure) {
  const Design mp = Make(Construction::kEps, 4, 8, 1e-3, Precision::kMp50, kDefaultMaxDigits);
  const Design f64 = Make(Construction::kEps, 4, 8, 1e-3);
  const Design exact =
      Make(Construction::kVandermonde, 4, 8, 1e-2, Precision::kAuto, kDefaultMaxDigits);
  ASSERT_TRUE(exact.exact_figures().has_value());
  struct Case {
    const Design* design;
    std::function<void(DesignParts&)> falsify;
    std::string check;
  };
  const std::vector<Case> cases = {
      {&mp, [](DesignParts& p) { p.figures->predicted_error["float32"] *= 1.01; },
       "figures.predicted_error[float32]"},
      {&mp, [](DesignParts& p) { p.figures->kappa_enc_per_rank[2] *= 1 + 1e-12; },
       "figures.kappa_enc_per_rank[2]"},  // certified to 15 digits: 1e-12 is beyond
      {&mp, [](DesignParts& p) { p.figures->err_op *= 1 - 1e-9; }, "figures.err_op"},
      {&f64, [](DesignParts& p) { p.figures->err_rms_per_rank[1] *= 1 + 1e-4; },
       "figures.err_rms_per_rank[1]"},  // uncertified: 6 digits
      {&f64, [](DesignParts& p) { p.figures->predicted_error["bfloat16"] *= 0.5; },
       "figures.predicted_error[bfloat16]"},
      {&exact, [](DesignParts& p) { p.exact_figures->err_op *= 1 + 1e-8; },
       "exact_figures.err_op"},
      {&exact, [](DesignParts& p) { p.exact_figures->kappa_dec_per_rank[3] *= 2; },
       "exact_figures.kappa_dec_per_rank[3]"},
      {&exact, [](DesignParts& p) { p.exact_figures->predicted_error["float32"] = 1e-3; },
       "exact_figures.predicted_error[float32] (not re-derivable)"},
  };
  for (const Case& c : cases) {
    DesignParts parts = c.design->parts();
    c.falsify(parts);
    const Validation v = Validate(Resigned(parts));
    EXPECT_FALSE(v.ok()) << c.check;
    EXPECT_EQ(FirstDiffering(v), c.check);
  }
  // Within an uncertified figure's 6 digits a change is not a disagreement (documented rule).
  DesignParts parts = f64.parts();
  parts.figures->err_op *= 1 + 1e-9;
  EXPECT_TRUE(Validate(Resigned(parts)).ok());
}

// A design written with --precision float64 validates: its error figures are kappa_dec u
// rounding (1.6e-10 here) off the high-precision re-derivation, which failed the uncertified
// 6 digits (err_op 1.63305e-6 recorded, 1.63302e-6 exact). A falsified figure still fails.
TEST(Validate, AcceptsFloat64FiguresWithinTheirRounding) {
  const Design d = Make(Construction::kEps, 4, 8, 1e-6, Precision::kFloat64, kDefaultMaxDigits);
  ASSERT_EQ(d.figures()->precision, "float64");
  ASSERT_GT(d.figures()->kappa_dec, 1e6);
  const Validation v = Validate(Resigned(d.parts()));
  EXPECT_TRUE(v.ok()) << FirstDiffering(v);
  DesignParts parts = d.parts();
  parts.figures->err_op *= 1 + 1e-3;
  EXPECT_EQ(FirstDiffering(Validate(Resigned(parts))), "figures.err_op");
}

// Re-analysing in float64 refuses where float64 cannot be trusted, as making a design in float64
// does: it returned finite garbage for a certified vandermonde design (err_op 63.7 for 56.7), and
// validate --precision float64 then blamed the file.
TEST(Validate, Float64AnalysisRefusesWhereItCannotBeTrusted) {
  const Design d =
      Make(Construction::kVandermonde, 4, 8, 1e-2, Precision::kAuto, kDefaultMaxDigits);
  ASSERT_NE(d.figures()->precision, "float64");
  const std::string what = MessageOf([&] { Analyse(d, Precision::kFloat64); });
  EXPECT_NE(what.find("float64 cannot be trusted here"), std::string::npos) << what;
  EXPECT_THROW(Validate(d, Precision::kFloat64), NumericalError);
}

TEST(Validate, ExactFiguresNeedTheConstructionTheProvenanceNames) {
  DesignParts parts = Make(Construction::kVandermonde, 4, 8, 1e-2, Precision::kAuto, 50).parts();
  parts.provenance.parameters["eps"] = 2e-2;
  try {
    Validate(Resigned(parts));
    FAIL() << "expected DesignError";
  } catch (const DesignError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the vandermonde construction"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cerar::design::test
