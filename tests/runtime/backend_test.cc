// CPU back end against naive loops: Encode, Step (incl. the in-place observation), Decode, for
// float32 and float64, strided rows and padded tails (kc < c).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/backend.h"

namespace cerar {
namespace {

template <typename T>
class BackendTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BackendTest, Types);

template <typename T>
DType DT() {
  return std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
}
template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

TYPED_TEST(BackendTest, EncodeAndDecodeMatchLoops) {
  using T = TypeParam;
  const int L = 7, c = 4;
  const std::size_t m = 11, ld = 13, col0 = 3, cols = 6;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  MatrixXd E(L, c), D(c, c);
  for (int i = 0; i < L * c; ++i) E.data()[i] = u(rng);
  for (int i = 0; i < c * c; ++i) D.data()[i] = u(rng);
  auto be = CreateCpuBackend();
  be->SetMatrices(E, D);
  std::vector<T> g(c * m), enc(L * ld, T(-7)), obs(c * ld);
  for (auto& v : g) v = T(u(rng));
  for (auto& v : obs) v = T(u(rng));
  // Row ranges of the encoder: all rows, the first row only, a middle block, the last row.
  const std::vector<RowRange> enc_rows = {{0, L}, {0, 1}, {2, 3}, {L - 1, 1}};
  for (int kc : {c, c - 1, 1}) {
    for (RowRange rows : enc_rows) {
      std::fill(enc.begin(), enc.end(), T(-7));
      be->Encode(DT<T>(), g.data(), m, col0, cols, kc, rows, enc.data(), ld);
      for (int t = 0; t < L; ++t)
        for (std::size_t col = 0; col < ld; ++col) {
          if (t < rows.first || t >= rows.first + rows.count || col < col0 ||
              col >= col0 + cols) {
            EXPECT_EQ(enc[t * ld + col], T(-7)) << "wrote outside the rows or columns";
            continue;
          }
          double ref = 0;
          for (int k = 0; k < kc; ++k) ref += E(t, k) * double(g[k * m + col]);
          EXPECT_NEAR(enc[t * ld + col], ref, Tol<T>()) << "t " << t << " col " << col;
        }
    }
    std::vector<T> out = g;
    be->Decode(DT<T>(), obs.data(), ld, out.data(), m, col0, cols, kc, 0.5);
    for (int k = 0; k < c; ++k)
      for (std::size_t col = 0; col < m; ++col) {
        const std::size_t idx = k * m + col;
        if (k >= kc || col < col0 || col >= col0 + cols) {
          EXPECT_EQ(out[idx], g[idx]) << "wrote padding or outside the range";
          continue;
        }
        double ref = g[idx];
        for (int r = 0; r < c; ++r) ref += D(k, r) * double(obs[r * ld + col]);
        EXPECT_NEAR(out[idx], 0.5 * ref, Tol<T>());
      }
  }
}

TYPED_TEST(BackendTest, ScaleAndSupports) {
  using T = TypeParam;
  std::vector<T> x = {1, -2, 3, 4};
  auto be = CreateCpuBackend();
  be->Scale(DT<T>(), x.data(), 3, 0.5);
  EXPECT_EQ(x, (std::vector<T>{0.5, -1, 1.5, 4}));
  EXPECT_TRUE(be->Supports(DT<T>()));
  EXPECT_FALSE(be->Supports(DType::kBFloat16));
  EXPECT_FALSE(be->Supports(DType::kFloat16));
}

TYPED_TEST(BackendTest, StepIsFusedAndAllowsTheObservationInPlace) {
  using T = TypeParam;
  const std::size_t n = 37;
  std::vector<T> en(n), y(n), eb(n), x(n), obs(n);
  for (std::size_t i = 0; i < n; ++i) {
    en[i] = T(i);
    y[i] = T(3 * i + 1);
    eb[i] = T(2 * i);
  }
  auto be = CreateCpuBackend();
  be->Step(DT<T>(), en.data(), y.data(), eb.data(), x.data(), obs.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(obs[i], T(i + 1));
    EXPECT_EQ(x[i], T(2 * i + 1));
  }
  // Null operands read as zero; obs aliasing y_prev.
  std::vector<T> yy = y;
  be->Step(DT<T>(), en.data(), yy.data(), eb.data(), x.data(), yy.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(yy[i], T(i + 1));
    EXPECT_EQ(x[i], T(2 * i + 1));
  }
  be->Step(DT<T>(), en.data(), nullptr, nullptr, x.data(), nullptr, n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(x[i], en[i]);
  be->Step(DT<T>(), nullptr, y.data(), eb.data(), nullptr, obs.data(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(obs[i], T(i + 1));
  be->Step(DT<T>(), en.data(), nullptr, eb.data(), x.data(), nullptr, n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(x[i], -T(i));
}

TEST(Backend, RejectsUnsupportedDTypesAndShapes) {
  auto be = CreateCpuBackend();
  EXPECT_THROW(be->SetMatrices(MatrixXd::Zero(5, 3), MatrixXd::Zero(3, 2)), InvalidArgument);
  be->SetMatrices(MatrixXd::Zero(5, 3), MatrixXd::Zero(3, 3));
  float buf[8] = {};
  EXPECT_THROW(be->Step(DType::kBFloat16, buf, buf, buf, buf, buf, 2), InvalidArgument);
  EXPECT_THROW(be->Encode(DType::kFloat32, buf, 1, 0, 1, 4, {0, 5}, buf, 1), InvalidArgument);  // kc > c
  EXPECT_THROW(be->Encode(DType::kFloat32, buf, 1, 0, 1, 3, {3, 3}, buf, 1), InvalidArgument);  // rows > L
  EXPECT_THROW(be->Encode(DType::kFloat32, buf, 1, 0, 1, 3, {-1, 1}, buf, 1), InvalidArgument);
  // first + count beyond INT_MAX once wrapped negative and passed the check (then a segfault).
  try {
    be->Encode(DType::kFloat32, buf, 1, 0, 1, 3, {2, std::numeric_limits<int>::max()}, buf, 1);
    ADD_FAILURE() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rows [2, 2147483649) outside [0, 5)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(be->memory_space(), MemorySpace::kHost);
}

}  // namespace
}  // namespace cerar
