// Design::Create validation, accessors, window/HopOffset against PROTOCOL.md §2-§4, fingerprint.
#include "cerar/format/design.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cerar/errors.h"
#include "test_support.h"

namespace cerar {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_support::RandomDesign;
using testing_support::RandomParts;

template <typename Exception, typename F>
std::string MessageOf(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

struct Shape {
  int N, c;
};
void PrintTo(const Shape& s, std::ostream* os) { *os << "N" << s.N << "_c" << s.c; }

class DesignShapes : public ::testing::TestWithParam<Shape> {};

INSTANTIATE_TEST_SUITE_P(
    Shapes, DesignShapes,
    ::testing::Values(Shape{2, 1}, Shape{2, 3}, Shape{3, 1}, Shape{3, 2}, Shape{4, 3},
                      Shape{4, 4}, Shape{4, 6}, Shape{5, 7}, Shape{7, 3}, Shape{8, 16}),
    [](const auto& tp) {
      return "N" + std::to_string(tp.param.N) + "_c" + std::to_string(tp.param.c);
    });

TEST_P(DesignShapes, AccessorsAndRates) {
  const auto [N, c] = GetParam();
  const Design d = RandomDesign(N, c, 7);
  EXPECT_EQ(d.N(), N);
  EXPECT_EQ(d.c(), c);
  EXPECT_EQ(d.L(), c + N - 2);
  EXPECT_DOUBLE_EQ(d.traffic_rate(), double(c + N - 2) / c);
  EXPECT_DOUBLE_EQ(d.workspace_rate(), 1.0 + double(N) / c);
  EXPECT_DOUBLE_EQ(d.ring_traffic_rate(), 2.0 * (N - 1) / N);
  for (int i = 0; i < N; ++i) {
    EXPECT_EQ(d.encoder(i).rows(), d.L());
    EXPECT_EQ(d.decoder(i).cols(), c);
  }
  EXPECT_THROW(d.encoder(N), InvalidArgument);
  EXPECT_THROW(d.decoder(-1), InvalidArgument);
}

// HopOffset by counting hops round the ring, not by the mod formula.
int HopsMinusOne(int i, int j, int N) {
  int hops = 1;
  while ((i + hops) % N != j) ++hops;
  return hops - 1;
}

TEST_P(DesignShapes, HopOffsetCountsHops) {
  const int N = GetParam().N;
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < N; ++j) {
      if (i == j) {
        EXPECT_THROW(HopOffset(i, j, N), InvalidArgument);
        continue;
      }
      const int s = HopOffset(i, j, N);
      EXPECT_EQ(s, HopsMinusOne(i, j, N)) << "i=" << i << " j=" << j;
      EXPECT_GE(s, 0);
      EXPECT_LE(s, N - 2);
    }
  }
}

// Near INT_MAX, (j - 1 - i) + N overflowed an int; the hop count is exact in 64 bits.
TEST(HopOffsetLarge, NoOverflowNearIntMax) {
  const int N = std::numeric_limits<int>::max();
  EXPECT_EQ(HopOffset(0, 1, N), 0);
  EXPECT_EQ(HopOffset(1, 0, N), N - 2);
  EXPECT_EQ(HopOffset(N - 1, 0, N), 0);
  EXPECT_EQ(HopOffset(0, N - 1, N), N - 2);
  EXPECT_EQ(HopOffset(5, 2, N), N - 4);  // 2 - 5 + N hops, minus one
}

TEST_P(DesignShapes, WindowRowsFollowFormula) {
  const auto [N, c] = GetParam();
  const Design d = RandomDesign(N, c, 11);
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < N; ++j) {
      if (i == j) {
        EXPECT_THROW(d.window(i, j), InvalidArgument);
        continue;
      }
      const MatrixXd w = d.window(i, j);
      ASSERT_EQ(w.rows(), c);
      ASSERT_EQ(w.cols(), c);
      const int s = HopsMinusOne(i, j, N);
      for (int r = 0; r < c; ++r) {
        for (int k = 0; k < c; ++k) EXPECT_EQ(w(r, k), d.encoder(i)(N - 2 + r - s, k));
      }
    }
  }
}

// Runs the rounds of PROTOCOL.md §2 with scalar components (m = 1) and checks the observations
// of §3 against Σ_{i≠j} W_ij g_i: an independent check that window() is the right window.
TEST_P(DesignShapes, WindowsReproduceTheRingRounds) {
  const auto [N, c] = GetParam();
  const Design d = RandomDesign(N, c, 23);
  const int L = d.L();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Eigen::VectorXd> g(N);
  for (auto& gi : g) gi = Eigen::VectorXd::NullaryExpr(c, [&] { return u(rng); });
  auto e = [&](int i, int t) { return (t < 0 || t >= L) ? 0.0 : d.encoder(i).row(t).dot(g[i]); };
  std::vector<std::vector<double>> y(N, std::vector<double>(L, 0.0));
  for (int t = 0; t < L; ++t) {
    std::vector<double> x(N);
    for (int i = 0; i < N; ++i) x[i] = e(i, t) + (t > 0 ? y[i][t - 1] : 0.0) - e(i, t - N);
    for (int i = 0; i < N; ++i) y[i][t] = x[(i - 1 + N) % N];
  }
  for (int j = 0; j < N; ++j) {
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(c);
    for (int i = 0; i < N; ++i) {
      if (i != j) expected += d.window(i, j) * g[i];
    }
    for (int r = 0; r < c; ++r) {
      const int t = N - 2 + r;
      const double observed = y[j][t] - e(j, t - N + 1);
      EXPECT_NEAR(observed, expected(r), 1e-12 * (1 + std::abs(expected(r))))
          << "j=" << j << " r=" << r;
    }
  }
}

TEST(DesignCreate, MessageNamesMatrixRowsAndRule) {
  DesignParts p = RandomParts(8, 16, 1);
  p.encoders[3] = MatrixXd::Zero(21, 16);
  EXPECT_EQ(MessageOf<DesignError>([&] { Design::Create(p, "design file N8_c16.json"); }),
            "design file N8_c16.json: E[3] has 21 rows, expected 22 = c + N - 2");
}

TEST(DesignCreate, RejectsEachBrokenRule) {
  auto rejects = [](DesignParts p, std::vector<std::string> words) {
    const std::string m = MessageOf<DesignError>([&] { Design::Create(std::move(p), "src"); });
    for (const auto& w : words) EXPECT_THAT(m, HasSubstr(w)) << "message: " << m;
  };
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.N = 1;
    rejects(p, {"src: ", "N = 1", "N >= 2"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.c = 0;
    rejects(p, {"c = 0", "c >= 1"});
  }
  {
    DesignParts p;  // nothing allocated: the bound is checked first
    p.N = 1000000000;
    p.c = 4;
    rejects(p, {"N = 1000000000", "limit"});
  }
  {
    DesignParts p;
    p.N = 4096;
    p.c = 4096;
    rejects(p, {"matrix entries", "limit"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.encoders.pop_back();
    rejects(p, {"3 encoders", "expected 4 = N"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.decoders.push_back(p.decoders[0]);
    rejects(p, {"5 decoders", "expected 4 = N"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.encoders[2] = MatrixXd::Zero(5, 2);
    rejects(p, {"E[2]", "2 columns", "expected 3 = c"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.decoders[1] = MatrixXd::Zero(2, 3);
    rejects(p, {"D[1]", "2 rows", "expected 3 = c"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.encoders[0](4, 2) = std::numeric_limits<double>::quiet_NaN();
    rejects(p, {"E[0][4][2]", "nan", "finite"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.decoders[3](0, 0) = -std::numeric_limits<double>::infinity();
    rejects(p, {"D[3][0][0]", "-inf", "finite"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.figures->kappa_dec_per_rank.pop_back();
    rejects(p, {"figures.kappa_dec_per_rank", "3 entries", "expected 4 = N"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.figures->err_rms = -1;
    rejects(p, {"figures.err_rms", "-1", ">= 0"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.exact_figures = p.figures;
    p.exact_figures->err_op = std::numeric_limits<double>::quiet_NaN();
    rejects(p, {"exact_figures.err_op", "nan"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.figures->precision = "float16";
    rejects(p, {"figures.precision", "float16"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.provenance.parameters["eps"] = std::numeric_limits<double>::infinity();
    rejects(p, {"provenance.parameters.eps", "inf"});
  }
  {  // accepted once, then SaveDesign failed: "a JSON discarded value cannot be hashed"
    DesignParts p = RandomParts(4, 3, 1);
    p.provenance.parameters["d"] = nlohmann::json(nlohmann::json::value_t::discarded);
    rejects(p, {"provenance.parameters.d", "discarded JSON value"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.provenance.parameters = nlohmann::json::array();
    rejects(p, {"provenance.parameters", "expected an object"});
  }
  {
    DesignParts p = RandomParts(4, 3, 1);
    p.notes.push_back(std::string("bad \xff utf8"));
    rejects(p, {"notes[0]", "UTF-8"});
  }
}

TEST(DesignCreate, AcceptsInfiniteConditionNumberAndNoFigures) {
  DesignParts p = RandomParts(3, 2, 4);
  p.figures->kappa_dec = std::numeric_limits<double>::infinity();
  EXPECT_NO_THROW(Design::Create(p));
  p.figures.reset();
  EXPECT_FALSE(Design::Create(p).figures().has_value());
}

TEST(DesignFingerprint, DeterministicAndSensitiveToEveryMatrixBit) {
  const DesignParts p = RandomParts(4, 6, 3);
  const std::uint64_t f = Design::Create(p).fingerprint();
  EXPECT_EQ(Design::Create(p).fingerprint(), f);
  DesignParts other = p;  // provenance and figures are not part of the fingerprint
  other.provenance.construction = "custom";
  other.figures.reset();
  EXPECT_EQ(Design::Create(other).fingerprint(), f);
  DesignParts ulp = p;
  ulp.decoders[3](5, 5) = std::nextafter(ulp.decoders[3](5, 5), 2.0);
  EXPECT_NE(Design::Create(ulp).fingerprint(), f);
  DesignParts e = p;
  e.encoders[0](0, 0) = std::nextafter(e.encoders[0](0, 0), -2.0);
  EXPECT_NE(Design::Create(e).fingerprint(), f);
  DesignParts zero = p, negzero = p;
  zero.encoders[1](2, 1) = 0.0;
  negzero.encoders[1](2, 1) = -0.0;
  EXPECT_NE(Design::Create(zero).fingerprint(), Design::Create(negzero).fingerprint());
}

}  // namespace
}  // namespace cerar
