// The least-squares decoder (PROTOCOL.md §4) and the analysis in float64 / mp50 (§5).
#include <algorithm>
#include <cmath>
#include <optional>

#include "cerar/errors.h"
#include "test_support.h"

namespace cerar::design::test {
namespace {

using MatrixXld = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;

// Gradient of sum_{i!=j} ||D W_ij - I||_F^2 in D is 2 sum (D W - I) W^T; at the least-squares
// decoder it vanishes up to the rounding of D to float64 (~ u ||D|| ||sum W W^T||).
void ExpectNormalEquations(const Design& d) {
  const int N = d.N(), c = d.c();
  for (int j = 0; j < N; ++j) {
    const MatrixXld D = d.decoder(j).cast<long double>();
    MatrixXld grad = MatrixXld::Zero(c, c), gram = grad;
    for (int i = 0; i < N; ++i) {
      if (i == j) continue;
      const MatrixXld W = WindowOf(d.encoders(), i, j, N, c).cast<long double>();
      grad += (D * W - MatrixXld::Identity(c, c)) * W.transpose();
      gram += W * W.transpose();
    }
    const double scale = double(D.norm() * gram.norm());
    EXPECT_LT(double(grad.norm()), 1e-13 * c * scale) << "rank " << j;
    // A perturbed decoder must fail the same check (the test can fail).
    const MatrixXld D2 = D + 1e-6 * D.norm() * MatrixXld::Identity(c, c) / std::sqrt(double(c));
    MatrixXld grad2 = MatrixXld::Zero(c, c);
    for (int i = 0; i < N; ++i) {
      if (i == j) continue;
      const MatrixXld W = WindowOf(d.encoders(), i, j, N, c).cast<long double>();
      grad2 += (D2 * W - MatrixXld::Identity(c, c)) * W.transpose();
    }
    EXPECT_GT(double(grad2.norm()), 1e-3 * 1e-6 * scale / c) << "rank " << j;
  }
}

// kappa_2 of a matrix from its singular values in long double.
double Kappa(const MatrixXld& m) {
  const auto s = Eigen::JacobiSVD<MatrixXld>(m).singularValues();
  return double(s(0) / s(s.size() - 1));
}

// err_op, err_rms, kappa_dec and kappa_enc recomputed from their definitions (PROTOCOL.md §5) in
// long double: all N - 1 windows, and the whole L x c encoder of every rank.
void ExpectFiguresMatchDefinition(const Design& d, double rel) {
  const int N = d.N(), c = d.c();
  const Figures& f = *d.figures();
  ASSERT_EQ(f.kappa_enc_per_rank.size(), std::size_t(N));
  ASSERT_EQ(f.kappa_dec_per_rank.size(), std::size_t(N));
  for (int i = 0; i < N; ++i) {
    ASSERT_EQ(d.encoder(i).rows(), d.L());
    const double enc = Kappa(d.encoder(i).cast<long double>());
    const double dec = Kappa(d.decoder(i).cast<long double>());
    EXPECT_NEAR(f.kappa_enc_per_rank[i], enc, rel * enc) << "rank " << i;
    EXPECT_NEAR(f.kappa_dec_per_rank[i], dec, rel * dec) << "rank " << i;
  }
  EXPECT_EQ(f.kappa_enc, *std::max_element(f.kappa_enc_per_rank.begin(),
                                           f.kappa_enc_per_rank.end()));
  EXPECT_EQ(f.kappa_dec, *std::max_element(f.kappa_dec_per_rank.begin(),
                                           f.kappa_dec_per_rank.end()));
  for (int j = 0; j < N; ++j) {
    MatrixXld block(c, (N - 1) * c);
    int col = 0;
    for (int i = 0; i < N; ++i) {
      if (i == j) continue;
      block.middleCols(col, c) =
          d.decoder(j).cast<long double>() *
              WindowOf(d.encoders(), i, j, N, c).cast<long double>() -
          MatrixXld::Identity(c, c);
      col += c;
    }
    const double frob = double(block.norm());
    const double op = double(Eigen::JacobiSVD<MatrixXld>(block).singularValues()(0));
    EXPECT_NEAR(f.err_rms_per_rank[j], frob / std::sqrt(double(N) * c), rel * frob + 1e-13);
    EXPECT_NEAR(f.err_op_per_rank[j], op, rel * op + 1e-13);
  }
}

class Decoder : public testing::TestWithParam<NC> {};

TEST_P(Decoder, RandomEncodersSatisfyNormalEquations) {
  const auto [N, c] = GetParam();
  Provenance p;
  p.construction = "random";
  const Design d = MakeFromEncoders(N, c, RandomEncoders(N, c, 17 + N * 100 + c), p);
  ExpectNormalEquations(d);
  ExpectFiguresMatchDefinition(d, 1e-9);
  EXPECT_EQ(d.provenance().construction, "random");
}

TEST_P(Decoder, EpsDesignSatisfiesNormalEquations) {
  const auto [N, c] = GetParam();
  const Design d = Make(Construction::kEps, N, c, 0.05);
  ExpectNormalEquations(d);
  ExpectFiguresMatchDefinition(d, 1e-8);
}

TEST_P(Decoder, Float64AgreesWithMp50WhenWellConditioned) {
  const auto [N, c] = GetParam();
  for (double eps : {0.3, 0.05}) {
    const Design d = Make(Construction::kEps, N, c, eps, Precision::kFloat64);
    const Figures f64 = Analyse(d, Precision::kFloat64);
    if (NeedsHighPrecision(f64)) continue;  // the rule says float64 is not enough here
    const Figures mp = Analyse(d, Precision::kMp50, 50);
    EXPECT_NE(mp.precision, "float64");
    EXPECT_EQ(f64.precision, "float64");
    auto near = [](double a, double b, double rel, double floor) {
      return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + floor;
    };
    EXPECT_TRUE(near(f64.err_op, mp.err_op, 1e-6, 1e-13)) << f64.err_op << " vs " << mp.err_op;
    EXPECT_TRUE(near(f64.err_rms, mp.err_rms, 1e-6, 1e-13)) << f64.err_rms << " vs " << mp.err_rms;
    EXPECT_TRUE(near(f64.kappa_dec, mp.kappa_dec, 1e-9, 0)) << f64.kappa_dec << " vs " << mp.kappa_dec;
    EXPECT_TRUE(near(f64.kappa_enc, mp.kappa_enc, 1e-9, 0)) << f64.kappa_enc << " vs " << mp.kappa_enc;
    // Deriving the decoders in mp50 gives the same design figures.
    const Design dmp = Make(Construction::kEps, N, c, eps, Precision::kMp50);
    EXPECT_TRUE(near(dmp.figures()->err_op, f64.err_op, 1e-6, 1e-13));
  }
}

INSTANTIATE_TEST_SUITE_P(Design, Decoder,
                         testing::Values(NC{2, 1}, NC{2, 3}, NC{4, 2}, NC{3, 7}, NC{4, 6},
                                         NC{5, 13}, NC{8, 20}),
                         NcName);

TEST(DecoderErrors, SingularGramNamesRankAndSize) {
  const int N = 3, c = 4;
  // E_i = a_i b^T: every window has rank 1, so sum_{i!=j} W_ij W_ij^T has rank N - 1 = 2 < 4.
  // Small integers keep the products exact, so the float64 data is exactly rank-deficient.
  std::vector<MatrixXd> E = RandomEncoders(N, c, 5);
  const Eigen::RowVectorXd b = E[0].row(0).array().round() + 5;
  for (auto& m : E) m = (m.col(0).array().round() + 0.5).matrix() * b;
  for (Precision p : {Precision::kFloat64, Precision::kMp50, Precision::kAuto}) {
    try {
      MakeFromEncoders(N, c, E, Provenance{}, p);
      ADD_FAILURE() << "expected NumericalError in " << ToString(p);
    } catch (const NumericalError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("singular"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 2 < c = 4"), std::string::npos) << what;
      EXPECT_NE(what.find("4 x 4"), std::string::npos) << what;
    }
  }
}

TEST(DecoderErrors, BadEncodersAreRejected) {
  std::vector<MatrixXd> E = RandomEncoders(4, 3, 1);
  EXPECT_THROW(MakeFromEncoders(4, 3, {E[0], E[1]}, Provenance{}), InvalidArgument);
  E[2] = MatrixXd::Zero(4, 3);  // L = 5 rows expected
  EXPECT_THROW(MakeFromEncoders(4, 3, E, Provenance{}), InvalidArgument);
}

TEST(ExactFigures, RecordedWhereRoundingMovesTheFigures) {
  // vandermonde N=4 c=8 eps=1e-2: kappa ~ 1e18, rounding to float64 destroys the design.
  const Design bad =
      Make(Construction::kVandermonde, 4, 8, 1e-2, Precision::kAuto, kDefaultMaxDigits);
  ASSERT_TRUE(bad.exact_figures().has_value());
  EXPECT_NE(bad.exact_figures()->precision, "float64");
  EXPECT_EQ(bad.exact_figures()->certified_digits.size(), 4u);
  EXPECT_LT(bad.exact_figures()->err_op, 0.05);  // the exact construction is fine
  EXPECT_GT(bad.figures()->err_op, 10 * bad.exact_figures()->err_op);  // the stored one not
  ASSERT_FALSE(bad.notes().empty());
  EXPECT_NE(bad.notes()[0].find("err_op"), std::string::npos);
  // Well-conditioned: no exact figures, no notes.
  const Design good = Make(Construction::kEps, 4, 8, 1e-3, Precision::kMp50);
  EXPECT_FALSE(good.exact_figures().has_value());
  EXPECT_TRUE(good.notes().empty());
}

TEST(PrecisionRule, AutoPicksFloat64OnlyWhereItAgreesWithMp50) {
  // Over a sweep into the ill-conditioned region, whenever the rule trusts float64, the
  // float64-derived design's figures agree with the mp50 ones.
  for (const NC& nc : {NC{4, 8}, NC{3, 7}, NC{4, 6}}) {
    for (double eps = 1e-1; eps > 1e-7; eps /= 10) {
      const Design dmp = Make(Construction::kEps, nc.first, nc.second, eps, Precision::kMp50);
      const Design da = Make(Construction::kEps, nc.first, nc.second, eps, Precision::kAuto);
      std::optional<Design> float64;
      try {
        float64 = Make(Construction::kEps, nc.first, nc.second, eps, Precision::kFloat64);
      } catch (const NumericalError&) {
        // float64 refused (kappa u > 1e-2 err_rms): auto must have gone to high precision
        EXPECT_NE(da.figures()->precision, "float64") << "eps " << eps;
        EXPECT_GT(dmp.figures()->kappa_dec * 0x1p-53, 1e-3 * dmp.figures()->err_rms)
            << "eps " << eps;
        continue;
      }
      const Design& d64 = *float64;
      const bool needs = NeedsHighPrecision(*d64.figures());
      EXPECT_EQ(da.figures()->precision != "float64", needs);
      if (!needs) {
        const double a = d64.figures()->err_op, b = dmp.figures()->err_op;
        EXPECT_NEAR(a, b, 1e-4 * b) << "eps " << eps;
      }
    }
  }
}

}  // namespace
}  // namespace cerar::design::test
