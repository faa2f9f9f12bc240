// Constructions of PROTOCOL.md §6 and the numbers of §7 and §9.
#include <cmath>
#include <limits>

#include "cerar/format/errors.h"
#include "test_support.h"

namespace cerar::design::test {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- §7 table -------------------------------------------------------------------------------

TEST(ProtocolTable, EpsN4c4IsExactWithKappaSqrt2) {
  const Design d = Make(Construction::kEps, 4, 4, 1e-3);
  EXPECT_EQ(d.L(), 6);
  EXPECT_LT(d.figures()->err_op, 1e-14);
  EXPECT_LT(d.figures()->err_rms, 1e-14);
  EXPECT_NEAR(d.figures()->kappa_dec, 1.414, 1.414 * 1e-3);
}

TEST(ProtocolTable, EpsN4c3IsExactWithKappa241) {
  const Design d = Make(Construction::kEps, 4, 3, 1e-3);
  EXPECT_EQ(d.L(), 5);
  EXPECT_LT(d.figures()->err_op, 1e-14);
  EXPECT_LT(d.figures()->err_rms, 1e-14);
  EXPECT_NEAR(d.figures()->kappa_dec, 2.41, 2.41 * 5e-3);
}

TEST(ProtocolTable, EpsN4c8Eps1e3) {
  for (Precision p : {Precision::kAuto, Precision::kMp50}) {
    const Design d = Make(Construction::kEps, 4, 8, 1e-3, p);
    EXPECT_EQ(d.L(), 10);
    const Figures& f = *d.figures();
    EXPECT_NEAR(f.err_op, 1.63e-3, 1.63e-3 * 5e-3) << ToString(p);
    EXPECT_NEAR(f.err_rms, 8.16e-4, 8.16e-4 * 5e-3) << ToString(p);
    EXPECT_NEAR(f.kappa_dec, 1.41e3, 1.41e3 * 5e-3) << ToString(p);
    EXPECT_EQ(f.err_op_per_rank.size(), 4u);
    EXPECT_EQ(f.kappa_enc_per_rank.size(), 4u);
  }
}

TEST(ProtocolTable, VandermondeN4c6NeedsHighPrecision) {
  const Design d = Make(Construction::kVandermonde, 4, 6, 1e-2);  // auto
  const Figures& f = *d.figures();
  EXPECT_EQ(d.L(), 8);
  EXPECT_EQ(f.precision, "mp50");
  EXPECT_NEAR(f.err_op, 3.2e-2, 3.2e-2 * 2e-2);
  EXPECT_GT(f.kappa_dec, 1e12);
  EXPECT_LT(f.kappa_dec, 1e14);
  EXPECT_TRUE(NeedsHighPrecision(Analyse(d, Precision::kFloat64)));
  const Figures again = Analyse(d, Precision::kAuto);
  EXPECT_EQ(again.precision, "mp50");
  EXPECT_NEAR(again.err_op, f.err_op, 1e-9 * f.err_op);

  // The decoder formula D_j = (sum W^T)(sum W W^T)^{-1} evaluated in float64 is garbage:
  // its error, measured in mp50, is far from the 50-digit value.
  DesignParts parts = d.parts();
  const int N = 4, c = 6;
  for (int j = 0; j < N; ++j) {
    Eigen::MatrixXd sum_wt = Eigen::MatrixXd::Zero(c, c), gram = sum_wt;
    for (int i = 0; i < N; ++i) {
      if (i == j) continue;
      const Eigen::MatrixXd W = WindowOf(d.encoders(), i, j, N, c);
      sum_wt += W.transpose();
      gram += W * W.transpose();
    }
    parts.decoders[j] = sum_wt * gram.inverse();
  }
  parts.figures.reset();
  parts.exact_figures.reset();
  parts.notes.clear();
  const double garbage = Analyse(Design::Create(parts, "float64 formula"), Precision::kMp50).err_op;
  EXPECT_TRUE(garbage > 1 || std::abs(garbage - 3.2e-2) > 3.2e-2) << garbage;
}

// ---- exactness for c <= N -------------------------------------------------------------------

class Exact : public testing::TestWithParam<NC> {};

TEST_P(Exact, ErrorIsRoundingOnly) {
  const auto [N, c] = GetParam();
  for (double eps : {0.0, 1e-3, 0.3}) {
    const Design d = Make(Construction::kEps, N, c, eps);
    EXPECT_LT(d.figures()->err_op, 1e-14) << "eps " << eps;
    EXPECT_LT(d.figures()->err_rms, 1e-14) << "eps " << eps;
    EXPECT_EQ(d.figures()->precision, "float64");  // well-conditioned: auto stays in float64
  }
}

INSTANTIATE_TEST_SUITE_P(Design, Exact,
                         testing::Values(NC{2, 1}, NC{2, 2}, NC{4, 2}, NC{3, 3}, NC{4, 3},
                                         NC{4, 4}, NC{5, 5}, NC{7, 3}, NC{8, 5}, NC{8, 8},
                                         NC{16, 16}),
                         NcName);

// At c = N the window holds one full period of the Fourier basis: D = F^-1, kappa = sqrt(2).
class SquareExact : public testing::TestWithParam<int> {};

TEST_P(SquareExact, KappaDecIsSqrt2) {
  const int N = GetParam(), c = N;
  const Design d = Make(Construction::kEps, N, c, 1e-2);
  // N = 2: the basis is {1, cos(pi tau)}, both of norm^2 N: kappa = 1. Else sqrt(2).
  const double expected = N == 2 ? 1.0 : std::sqrt(2.0);
  for (double k : d.figures()->kappa_dec_per_rank) EXPECT_NEAR(k, expected, expected * 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Design, SquareExact, testing::Values(2, 3, 4, 5, 8, 16, 33));

// ---- structure of the constructions ----------------------------------------------------------

class Structure : public testing::TestWithParam<NC> {};

TEST_P(Structure, EncodersAreShiftsOfTheBaseSequence) {
  const auto [N, c] = GetParam();
  for (Construction k : {Construction::kEps, Construction::kVandermonde}) {
    const double eps = 0.05;
    const MatrixXd C = BaseSequence(k, N, c, eps);
    ASSERT_EQ(C.rows(), c + 2 * N - 3);
    ASSERT_EQ(C.cols(), c);
    const Design d = Make(k, N, c, eps);  // may be derived in mp50: compare to 1e-14
    for (int i = 0; i < N; ++i) {
      ASSERT_EQ(d.encoder(i).rows(), d.L());
      for (int t = 0; t < d.L(); ++t) {
        const Eigen::RowVectorXd want = C.row(t - i + N - 1);
        EXPECT_LE((d.encoder(i).row(t) - want).norm(), 1e-14 * want.norm())
            << ToString(k) << " E_" << i << "[" << t << "]";
      }
    }
    EXPECT_EQ(d.provenance().construction, ToString(k));
    EXPECT_TRUE(d.provenance().shift_invariant);
    EXPECT_EQ(d.provenance().parameters.at("eps").get<double>(), eps);
  }
}

TEST_P(Structure, EpsSequenceMatchesClosedForm) {
  const auto [N, c] = GetParam();
  const double eps = 0.02;
  const MatrixXd C = BaseSequence(Construction::kEps, N, c, eps);
  const int r = RStar(N, c);
  for (int k = 0; k < c; ++k) {
    const int q = k / N, p = k % N;
    const double lambda = q - r / 2.0;
    for (int row = 0; row < C.rows(); ++row) {
      const int tau = row - (N - 1);
      const int m = (p + 1) / 2;
      const double f = p == 0 ? 1.0
                       : p % 2 ? std::cos(2 * kPi * m * tau / N)
                               : std::sin(2 * kPi * m * tau / N);
      EXPECT_NEAR(C(row, k), std::exp(eps * lambda * tau) * f, 1e-13) << row << "," << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Design, Structure,
                         testing::Values(NC{2, 1}, NC{2, 3}, NC{3, 7}, NC{4, 3}, NC{4, 8},
                                         NC{5, 13}),
                         NcName);

// ---- §9: one-sided decoder D_j = W_ij^{-1} (i < j): error on the other side (i > j) is
// diag(alpha^-N) - I. In the real eps construction a cos/sin pair shares the real factor
// exp(-eps lambda_q N), so the 2x2 blocks are diagonal too. Needs a rank with both sides: N >= 3.

class OneSided : public testing::TestWithParam<NC> {};

TEST_P(OneSided, OtherSideErrorIsDiagAlphaMinusNMinusI) {
  const auto [N, c] = GetParam();
  ASSERT_GE(N, 3);
  const int j = 1;  // i = 0 < j and i = 2 > j both exist
  for (Construction k : {Construction::kEps, Construction::kVandermonde}) {
    const double eps = k == Construction::kEps ? 1e-2 : 0.3;
    const Design d = Make(k, N, c, eps);
    using MatrixXld = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic>;
    const MatrixXld A = WindowOf(d.encoders(), 0, j, N, c).cast<long double>();
    const MatrixXld B = WindowOf(d.encoders(), 2, j, N, c).cast<long double>();
    const MatrixXld delta = A.partialPivLu().solve(B) - MatrixXld::Identity(c, c);
    const int r = RStar(N, c);
    for (int a = 0; a < c; ++a) {
      long double expected;
      if (k == Construction::kEps) {
        const long double lambda = a / N - r / 2.0L;
        expected = std::exp(-(long double)eps * lambda * N) - 1;
      } else {
        const long double x = std::cos((2 * a + 1) * (long double)kPi / (2 * c));
        expected = std::pow(1 + (long double)eps * x, -N) - 1;
      }
      for (int b = 0; b < c; ++b) {
        const long double want = a == b ? expected : 0;
        EXPECT_NEAR((double)delta(a, b), (double)want, 1e-9) << ToString(k) << " " << a << "," << b;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Design, OneSided,
                         testing::Values(NC{3, 1}, NC{3, 4}, NC{3, 6}, NC{4, 3}, NC{4, 6},
                                         NC{5, 8}),
                         NcName);

// The eps construction as PROTOCOL.md §6 specifies it ("stop at c columns") can end a cluster
// with cos(2 pi m tau / N) but not its sin. For odd N some windows are then exactly singular
// (independently of eps); the decoder must say so, naming the rank and the size.
TEST(ConstructionLimits, TrailingCosWithoutSinIsSingularForOddN) {
  for (const NC& nc : {NC{3, 2}, NC{3, 5}, NC{5, 7}, NC{5, 12}}) {
    for (Precision p : {Precision::kAuto, Precision::kMp50}) {
      try {
        Make(Construction::kEps, nc.first, nc.second, 0.05, p);
        ADD_FAILURE() << "expected NumericalError for N = " << nc.first << ", c = " << nc.second;
      } catch (const NumericalError& e) {
        EXPECT_NE(std::string(e.what()).find("singular in mp50"), std::string::npos) << e.what();
      }
    }
  }
}

// N = 2: every rank has a single window, so D_j = W_ij^{-1} and the design is exact for any c.
TEST(ConstructionLimits, NTwoIsExactForAnyC) {
  for (int c : {1, 3, 5, 8}) {
    const Design d = Make(Construction::kEps, 2, c, 0.1);
    EXPECT_LT(d.figures()->err_op, 1e-12) << "c = " << c;
  }
}

// ---- arguments ----------------------------------------------------------------------------------

TEST(ConstructionArguments, InvalidOnesThrowInvalidArgument) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(Make(Construction::kEps, 1, 4, 1e-3), InvalidArgument);
  EXPECT_THROW(Make(Construction::kEps, 4, 0, 1e-3), InvalidArgument);
  EXPECT_THROW(Make(Construction::kEps, 4, 8, nan), InvalidArgument);
  EXPECT_THROW(Make(Construction::kEps, 4, 8, -1e-3), InvalidArgument);
  EXPECT_THROW(Make(Construction::kEps, 4, 8, 0.0), InvalidArgument);  // eps = 0 needs c <= N
  EXPECT_NO_THROW(Make(Construction::kEps, 4, 4, 0.0));
  try {
    Make(Construction::kEps, 4, 8, 0.0);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("c = 8 > N = 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParsePrecision("fp128"), InvalidArgument);
  EXPECT_EQ(ParsePrecision("mp50"), Precision::kMp50);
  EXPECT_EQ(ParseConstruction("vandermonde"), Construction::kVandermonde);
  EXPECT_EQ(ParseArithmetic("bfloat16"), Arithmetic::kBFloat16);
  EXPECT_EQ(UnitRoundoff(Arithmetic::kFloat32), std::ldexp(1.0, -24));
}

}  // namespace
}  // namespace cerar::design::test
