// The CUDA back end's Encode, Step and Decode against an independent host computation in
// float64 on the same (rounded) inputs, for awkward counts. Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "cerar/runtime/cuda/cuda_backend.h"
#include "../common/random_design.h"
#include "gpu_test_util.h"

namespace cerar {
namespace {

using test::DeviceArray;
using test::RoundTo;

// Number of components with data in column `col`: those k with k * m + col < n.
int ComponentsAt(std::size_t n, std::size_t m, int c, std::size_t col) {
  int kc = 0;
  while (kc < c && std::size_t(kc) * m + col < n) ++kc;
  return kc;
}

// [col0, col0 + cols) pieces of [0, m) with constant kc, cut further into pieces of at most
// `piece` columns the way a pipelining engine would.
struct Segment { std::size_t col0, cols; int kc; };
std::vector<Segment> Segments(std::size_t n, std::size_t m, int c, std::size_t piece) {
  std::vector<Segment> out;
  std::size_t col = 0;
  while (col < m) {
    const int kc = ComponentsAt(n, m, c, col);
    std::size_t end = col + 1;
    while (end < m && ComponentsAt(n, m, c, end) == kc) ++end;
    for (std::size_t a = col; a < end; a += piece) out.push_back({a, std::min(piece, end - a), kc});
    col = end;
  }
  return out;
}

std::vector<double> Random(std::size_t count, DType t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v) x = RoundTo(t, u(rng));
  return v;
}

using test_common::RandomMatrix;

// The matrix as the device holds it for buffers of type t.
MatrixXd Rounded(const MatrixXd& A, DType t) {
  MatrixXd B = A;
  for (Eigen::Index i = 0; i < B.size(); ++i) B.data()[i] = RoundTo(t, A.data()[i]);
  return B;
}

struct Case {
  int N, c;
  std::size_t n;
  DType dtype;
};
void PrintTo(const Case& k, std::ostream* os) {
  *os << "N=" << k.N << " c=" << k.c << " n=" << k.n << " " << test::Name(k.dtype);
}

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::ostringstream s;
  s << "N" << info.param.N << "_c" << info.param.c << "_n" << info.param.n << "_"
    << test::Name(info.param.dtype);
  return s.str();
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  const std::pair<int, int> shapes[] = {{2, 1}, {2, 3}, {3, 2}, {4, 3}, {4, 4}, {3, 5}, {4, 8}};
  for (auto [N, c] : shapes) {
    std::vector<std::size_t> counts = {1, 7, 1001, (std::size_t(1) << 20) + 3};
    // Fewer elements than components (some components entirely padding).
    if (c > 2 && std::find(counts.begin(), counts.end(), std::size_t(c) - 1) == counts.end())
      counts.push_back(std::size_t(c) - 1);
    for (std::size_t n : counts)
      for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16})
        out.push_back({N, c, n, t});
  }
  return out;
}

class CudaBackendTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    CERAR_REQUIRE_GPU();
    CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    backend_ = CreateCudaBackend(stream_);
  }
  void TearDown() override {
    backend_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<ComputeBackend> backend_;
};

TEST_P(CudaBackendTest, EncodeEqualsHostProduct) {
  const auto [N, c, n, t] = GetParam();
  const int L = c + N - 2;
  const std::size_t m = (n + std::size_t(c) - 1) / std::size_t(c), ld = m + 3;
  std::mt19937_64 rng(1000 * N + c + n);
  const MatrixXd E = RandomMatrix(L, c, rng), D = RandomMatrix(c, c, rng);
  backend_->SetMatrices(E, D);
  const MatrixXd Ed = Rounded(E, t);
  const auto g = Random(n, t, rng);
  DeviceArray g_dev(t, n), enc_dev(t, std::size_t(L) * ld);
  g_dev.Upload(g);
  const double sentinel = 1024.0;  // exact in every type; never a result here (|E g| <= c)
  enc_dev.Upload(std::vector<double>(std::size_t(L) * ld, sentinel));
  for (const auto& s : Segments(n, m, c, std::max<std::size_t>(1, m / 3 + 1)))
    backend_->Encode(t, g_dev.get(), m, s.col0, s.cols, s.kc, {0, L}, enc_dev.get(), ld);
  const auto enc = enc_dev.Download();
  const double u = test::StoreRoundoff(t), ua = test::AccumRoundoff(t);
  const double eta = test::StoreUnderflow(t), eta_a = test::AccumUnderflow(t);
  for (int r = 0; r < L; ++r) {
    for (std::size_t col = 0; col < ld; ++col) {
      const double got = enc[std::size_t(r) * ld + col];
      if (col >= m) {
        ASSERT_EQ(got, sentinel) << "Encode wrote outside [0, m): row " << r << " col " << col;
        continue;
      }
      const int kc = ComponentsAt(n, m, c, col);
      double ref = 0, mag = 0;
      for (int k = 0; k < kc; ++k) {
        ref += Ed(r, k) * g[std::size_t(k) * m + col];
        mag += std::abs(Ed(r, k) * g[std::size_t(k) * m + col]);
      }
      // Rounding bound: storage rounding of the result plus kc accumulation roundings, each
      // relative to the magnitude plus its absolute (subnormal) part.
      const double bound = 2.0 * ((u + kc * ua) * mag + eta + kc * eta_a);
      ASSERT_LE(std::abs(got - ref), bound) << "enc[" << r << "][" << col << "] = " << got
                                            << ", host " << ref << " (kc = " << kc << ")";
    }
  }
}

TEST_P(CudaBackendTest, DecodeEqualsHostProduct) {
  const auto [N, c, n, t] = GetParam();
  const int L = c + N - 2;
  const std::size_t m = (n + std::size_t(c) - 1) / std::size_t(c), ld = m + 5;
  std::mt19937_64 rng(7000 * N + c + n);
  const MatrixXd E = RandomMatrix(L, c, rng), D = RandomMatrix(c, c, rng);
  backend_->SetMatrices(E, D);
  const MatrixXd Dd = Rounded(D, t);
  const auto g = Random(n, t, rng);
  const auto obs = Random(std::size_t(c) * ld, t, rng);
  DeviceArray g_dev(t, n), obs_dev(t, std::size_t(c) * ld);
  g_dev.Upload(g);
  obs_dev.Upload(obs);
  const double scale = 1.0 / N;
  for (const auto& s : Segments(n, m, c, std::max<std::size_t>(1, m / 2 + 1)))
    backend_->Decode(t, obs_dev.get(), ld, g_dev.get(), m, s.col0, s.cols, s.kc, scale);
  const auto out = g_dev.Download();
  const double u = test::StoreRoundoff(t), ua = test::AccumRoundoff(t);
  const double eta = test::StoreUnderflow(t), eta_a = test::AccumUnderflow(t);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = i / m, col = i % m;
    double ref = g[i], mag = std::abs(g[i]);
    for (int r = 0; r < c; ++r) {
      ref += Dd(Eigen::Index(k), r) * obs[std::size_t(r) * ld + col];
      mag += std::abs(Dd(Eigen::Index(k), r) * obs[std::size_t(r) * ld + col]);
    }
    ref *= scale;
    mag *= scale;
    const double bound = 2.0 * ((u + (c + 2) * ua) * mag + eta + (c + 2) * eta_a);
    ASSERT_LE(std::abs(out[i] - ref), bound)
        << "g[" << i << "] (component " << k << ", column " << col << ") = " << out[i]
        << ", host " << ref;
  }
}

// Row ranges, as the engine uses them: the encoder one block of rows at a time writes exactly
// those rows and equals the whole product to rounding.
TEST_P(CudaBackendTest, EncodeRowRangesMatchTheWholeProduct) {
  const auto [N, c, n, t] = GetParam();
  const int L = c + N - 2;
  const std::size_t m = (n + std::size_t(c) - 1) / std::size_t(c);
  std::mt19937_64 rng(11 * N + c + n);
  backend_->SetMatrices(RandomMatrix(L, c, rng), RandomMatrix(c, c, rng));
  const auto g = Random(n, t, rng);
  DeviceArray g_dev(t, n), whole(t, std::size_t(L) * m), parts(t, std::size_t(L) * m);
  g_dev.Upload(g);
  const double sentinel = 1024.0;
  parts.Upload(std::vector<double>(std::size_t(L) * m, sentinel));
  const auto segs = Segments(n, m, c, m);
  for (const auto& s : segs) {
    backend_->Encode(t, g_dev.get(), m, s.col0, s.cols, s.kc, {0, L}, whole.get(), m);
    backend_->Encode(t, g_dev.get(), m, s.col0, s.cols, s.kc, {0, 1}, parts.get(), m);
  }
  auto first = parts.Download();
  for (std::size_t i = m; i < first.size(); ++i) ASSERT_EQ(first[i], sentinel) << "row > 0 written";
  for (const auto& s : segs)
    for (int r0 = 1; r0 < L; r0 += 2)
      backend_->Encode(t, g_dev.get(), m, s.col0, s.cols, s.kc, {r0, std::min(2, L - r0)},
                       parts.get(), m);
  const auto p = parts.Download(), w = whole.Download();
  const double ua = test::AccumRoundoff(t), us = test::StoreRoundoff(t);
  for (std::size_t i = 0; i < p.size(); ++i)
    ASSERT_NEAR(p[i], w[i], 2.0 * (us + c * ua) * (1.0 + std::abs(w[i]) + c)) << "element " << i;

}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaBackendTest, testing::ValuesIn(Cases()), CaseName);

// Step: every combination of null inputs and outputs, aligned (vector) and unaligned (scalar)
// pointers. The host replays the device arithmetic (float32, or float64 for f64) exactly, so
// the results must be bit-identical.
struct StepCase {
  DType dtype;
  std::size_t len;
  std::size_t offset;  // element offset of every pointer (1 breaks 16-byte alignment)
};
void PrintTo(const StepCase& k, std::ostream* os) {
  *os << test::Name(k.dtype) << " len=" << k.len << " offset=" << k.offset;
}

class CudaStepTest : public testing::TestWithParam<StepCase> {};

template <typename A>
void ReplayStep(DType t, const double* en, const double* yp, const double* eb, double* x,
                double* obs) {
  A tmp = A(0);
  if (yp) tmp = A(*yp);
  if (eb) tmp = tmp - A(*eb);
  if (obs) *obs = RoundTo(t, double(tmp));
  if (x) *x = RoundTo(t, double(en ? A(A(*en) + tmp) : tmp));
}

TEST_P(CudaStepTest, EqualsHostReplayForEveryNullCombination) {
  CERAR_REQUIRE_GPU();
  const auto [t, len, offset] = GetParam();
  cudaStream_t stream;
  CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto backend = CreateCudaBackend(stream);
  std::mt19937_64 rng(len + offset);
  const std::size_t total = len + offset;
  const auto en = Random(total, t, rng), yp = Random(total, t, rng), eb = Random(total, t, rng);
  DeviceArray en_d(t, total), yp_d(t, total), eb_d(t, total), x_d(t, total), obs_d(t, total);
  en_d.Upload(en);
  yp_d.Upload(yp);
  eb_d.Upload(eb);
  for (int flags = 0; flags < 32; ++flags) {
    const bool has_en = flags & 1, has_yp = flags & 2, has_eb = flags & 4, has_x = flags & 8,
               has_obs = flags & 16;
    const double fill = 77.0;
    x_d.Upload(std::vector<double>(total, fill));
    obs_d.Upload(std::vector<double>(total, fill));
    backend->Step(t, has_en ? en_d.at(offset) : nullptr, has_yp ? yp_d.at(offset) : nullptr,
                  has_eb ? eb_d.at(offset) : nullptr, has_x ? x_d.at(offset) : nullptr,
                  has_obs ? obs_d.at(offset) : nullptr, len);
    const auto x = x_d.Download(), obs = obs_d.Download();
    for (std::size_t i = 0; i < total; ++i) {
      double rx = fill, ro = fill;
      if (i >= offset) {
        if (t == DType::kFloat64)
          ReplayStep<double>(t, has_en ? &en[i] : nullptr, has_yp ? &yp[i] : nullptr,
                             has_eb ? &eb[i] : nullptr, has_x ? &rx : nullptr,
                             has_obs ? &ro : nullptr);
        else
          ReplayStep<float>(t, has_en ? &en[i] : nullptr, has_yp ? &yp[i] : nullptr,
                            has_eb ? &eb[i] : nullptr, has_x ? &rx : nullptr,
                            has_obs ? &ro : nullptr);
      }
      ASSERT_EQ(x[i], rx) << "x[" << i << "] flags " << flags;
      ASSERT_EQ(obs[i], ro) << "obs[" << i << "] flags " << flags;
    }
  }
  backend.reset();
  CERAR_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The engine may step in place (x over y_prev): every input is read before any output is written.
TEST_P(CudaStepTest, InPlaceOverPreviousReceive) {
  CERAR_REQUIRE_GPU();
  const auto [t, len, offset] = GetParam();
  auto backend = CreateCudaBackend(nullptr);
  std::mt19937_64 rng(len * 3 + offset);
  const auto en = Random(len, t, rng), yp = Random(len, t, rng), eb = Random(len, t, rng);
  DeviceArray en_d(t, len), y_d(t, len), eb_d(t, len), obs_d(t, len);
  en_d.Upload(en);
  y_d.Upload(yp);
  eb_d.Upload(eb);
  backend->Step(t, en_d.get(), y_d.get(), eb_d.get(), y_d.get(), obs_d.get(), len);
  const auto x = y_d.Download(), obs = obs_d.Download();
  for (std::size_t i = 0; i < len; ++i) {
    double rx = 0, ro = 0;
    if (t == DType::kFloat64) ReplayStep<double>(t, &en[i], &yp[i], &eb[i], &rx, &ro);
    else ReplayStep<float>(t, &en[i], &yp[i], &eb[i], &rx, &ro);
    ASSERT_EQ(x[i], rx) << i;
    ASSERT_EQ(obs[i], ro) << i;
  }
}

std::vector<StepCase> StepCases() {
  std::vector<StepCase> out;
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16})
    for (std::size_t len : {std::size_t(1), std::size_t(7), std::size_t(1000), (std::size_t(1) << 20) + 5})
      for (std::size_t offset : {std::size_t(0), std::size_t(1)}) out.push_back({t, len, offset});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Counts, CudaStepTest, testing::ValuesIn(StepCases()),
                         [](const testing::TestParamInfo<StepCase>& info) {
                           std::ostringstream s;
                           s << test::Name(info.param.dtype) << "_len" << info.param.len
                             << "_off" << info.param.offset;
                           return s.str();
                         });

// Argument errors reach the caller through the back end, before anything is enqueued.
TEST(CudaBackend, RejectsBadMatricesAndCallsBeforeSetMatrices) {
  CERAR_REQUIRE_GPU();
  auto backend = CreateCudaBackend(nullptr);
  EXPECT_EQ(backend->memory_space(), MemorySpace::kDevice);
  test::DeviceArray buf(DType::kFloat32, 16);
  EXPECT_THROW(backend->Encode(DType::kFloat32, buf.get(), 4, 0, 4, 2, {0, 1}, buf.get(), 4), InvalidArgument);
  EXPECT_THROW(backend->SetMatrices(MatrixXd::Ones(1, 2), MatrixXd::Ones(2, 2)), InvalidArgument);
  backend->SetMatrices(MatrixXd::Ones(2, 2), MatrixXd::Identity(2, 2));
  EXPECT_THROW(backend->Decode(DType::kFloat32, buf.get(), 4, buf.get(), 4, 0, 5, 2, 1.0),
               InvalidArgument);
  void* p = backend->Allocate(1 << 20);
  EXPECT_NE(p, nullptr);
  backend->Free(p);
  EXPECT_EQ(backend->Allocate(0), nullptr);
  backend->Synchronize();
}

}  // namespace
}  // namespace cerar
