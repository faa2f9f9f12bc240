// The CUDA back end's wide paths for float32 buffers (Accumulation::kFloat64, kFloat64Feedback,
// kFloat64State; wide_kernels.cu): encode and decode are the float64 product rounded once (where
// the float32 path rounds every product and partial sum), the step is bit for bit the host's
// detail::WideStepAt, the CPU back end's own arithmetic, including the engine's in-place
// widening of y into a float64 observation. Skipped without a device, except the support rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "arguments.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "../common/random_design.h"
#include "gpu_test_util.h"
#include "wide_step.h"

namespace cerar {
namespace {

using test::DeviceArray;

std::vector<double> RandomF32(std::size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(count);
  for (auto& x : v) x = double(float(u(rng)));
  return v;
}

using test_common::RandomMatrix;

// |got - exact| for a float64 sum of `terms` products whose absolute values add to `mag`,
// rounded once to float32 (float_result) or kept in float64: the float64 sum is within
// (terms + 1) 2^-53 mag of the exact one (any order, fused or not), and one float32 rounding
// adds half an ulp of it. The float32 path rounds every product and partial sum, up to
// terms 2^-24 mag, which this bound does not allow for terms >= 2.
double OnceBound(double exact, double mag, int terms, bool float_result) {
  const double sum_error = (terms + 1) * 0x1p-53 * mag + 0x1p-1074;
  if (!float_result) return sum_error;
  return 0x1p-24 * (std::abs(exact) + sum_error) + sum_error + 0x1p-150;
}

// Column pieces of constant kc (components with data; the tail ones are padding past n), each
// cut in two as a pipelining engine would.
struct Piece {
  std::size_t col0, cols;
  int kc;
};
std::vector<Piece> Pieces(std::size_t n, std::size_t m, int c) {
  auto kc_at = [&](std::size_t col) {
    int kc = 0;
    while (kc < c && std::size_t(kc) * m + col < n) ++kc;
    return kc;
  };
  std::vector<Piece> out;
  for (std::size_t col = 0; col < m;) {
    const int kc = kc_at(col);
    std::size_t end = col + 1;
    while (end < m && kc_at(end) == kc) ++end;
    const std::size_t half = (end - col + 1) / 2;
    out.push_back({col, half, kc});
    if (end - col > half) out.push_back({col + half, end - col - half, kc});
    col = end;
  }
  return out;
}

TEST(CudaWideSupport, F32AndF64TakeEveryAccumulationLowPrecisionOnlyBuffer) {
  for (Accumulation a : {Accumulation::kBuffer, Accumulation::kFloat64,
                         Accumulation::kFloat64Feedback, Accumulation::kFloat64State}) {
    EXPECT_TRUE(cuda::SupportsAccumulation(DType::kFloat32, a)) << ToString(a);
    EXPECT_TRUE(cuda::SupportsAccumulation(DType::kFloat64, a)) << ToString(a);
    const bool plain = a == Accumulation::kBuffer;
    EXPECT_EQ(cuda::SupportsAccumulation(DType::kBFloat16, a), plain) << ToString(a);
    EXPECT_EQ(cuda::SupportsAccumulation(DType::kFloat16, a), plain) << ToString(a);
  }
  try {
    cuda::CheckAccumulation("Step", DType::kBFloat16, Accumulation::kFloat64State);
    FAIL() << "bf16 with f64-state accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "CUDA back end Step: accumulation f64-state on dtype bf16 is not supported"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(cuda::CheckAccumulation("Encode", DType::kFloat32, Accumulation::kFloat64));
}

class CudaWideFixture {
 protected:
  void Create() {
    CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    backend_ = CreateCudaBackend(stream_);
  }
  void Destroy() {
    backend_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<ComputeBackend> backend_;
};

struct WideCase {
  int N, c;
  std::size_t n;
  Accumulation accumulation;  // kFloat64 (float rows) or kFloat64State (double rows)
};
void PrintTo(const WideCase& k, std::ostream* os) {
  *os << "N=" << k.N << " c=" << k.c << " n=" << k.n << " " << ToString(k.accumulation);
}

class CudaWideTest : public testing::TestWithParam<WideCase>, protected CudaWideFixture {
 protected:
  void SetUp() override {
    CERAR_REQUIRE_GPU();
    Create();
    const WideCase& k = GetParam();
    rows64_ = k.accumulation == Accumulation::kFloat64State;
    row_type_ = rows64_ ? DType::kFloat64 : DType::kFloat32;
    L_ = k.c + k.N - 2;
    m_ = (k.n + std::size_t(k.c) - 1) / std::size_t(k.c);
  }
  void TearDown() override { Destroy(); }

  // Random E (L x c) and D (c x c), given to the back end, which then computes with the case's
  // accumulation.
  std::pair<MatrixXd, MatrixXd> Matrices(std::mt19937_64& rng) {
    const WideCase& k = GetParam();
    MatrixXd E = RandomMatrix(L_, k.c, rng), D = RandomMatrix(k.c, k.c, rng);
    backend_->SetMatrices(E, D);
    backend_->SetAccumulation(k.accumulation);
    return {E, D};
  }

  bool rows64_ = false;  // float64 workspace rows (kFloat64State)
  DType row_type_ = DType::kFloat32;
  int L_ = 0;
  std::size_t m_ = 0;
};

TEST_P(CudaWideTest, BackEndReportsTheWorkspaceRowsAndFeedback) {
  const auto [N, c, n, acc] = GetParam();
  backend_->SetAccumulation(acc);
  const bool state = acc == Accumulation::kFloat64State;
  EXPECT_EQ(backend_->StateElementBytes(DType::kFloat32), state ? 8u : 4u);
  EXPECT_EQ(backend_->StateElementBytes(DType::kFloat64), 8u);
  EXPECT_EQ(backend_->FeedsBackRounding(DType::kFloat32), state);
  EXPECT_FALSE(backend_->FeedsBackRounding(DType::kFloat64));
  EXPECT_TRUE(backend_->SupportsAccumulation(DType::kFloat32, acc));
  EXPECT_FALSE(backend_->SupportsAccumulation(DType::kBFloat16, acc));
}

// Encode of every row, segment by segment as the engine cuts the columns.
TEST_P(CudaWideTest, EncodeIsTheFloat64ProductRoundedOnce) {
  const auto [N, c, n, acc] = GetParam();
  const bool rows64 = rows64_;
  const int L = L_;
  const std::size_t m = m_, ld = m + 3;
  std::mt19937_64 rng(31 * N + c + n);
  const auto [E, D] = Matrices(rng);
  const auto g = RandomF32(n, rng);
  DeviceArray g_dev(DType::kFloat32, n), enc_dev(row_type_, std::size_t(L) * ld);
  g_dev.Upload(g);
  const double sentinel = 1024.0;
  enc_dev.Upload(std::vector<double>(std::size_t(L) * ld, sentinel));
  for (const Piece& p : Pieces(n, m, c)) {  // row 0 alone, as the engine's first send
    backend_->Encode(DType::kFloat32, g_dev.get(), m, p.col0, p.cols, p.kc, {0, 1},
                     enc_dev.get(), ld);
    backend_->Encode(DType::kFloat32, g_dev.get(), m, p.col0, p.cols, p.kc, {1, L - 1},
                     enc_dev.get(), ld);
  }
  const auto enc = enc_dev.Download();
  for (int t = 0; t < L; ++t)
    for (std::size_t col = 0; col < ld; ++col) {
      const double got = enc[std::size_t(t) * ld + col];
      if (col >= m) {
        ASSERT_EQ(got, sentinel) << "row " << t << " col " << col;
        continue;
      }
      double exact = 0, mag = 0;
      int terms = 0;
      for (int k = 0; k < c && std::size_t(k) * m + col < n; ++k, ++terms) {
        exact += E(t, k) * g[std::size_t(k) * m + col];  // float64 with error far below bound
        mag += std::abs(E(t, k) * g[std::size_t(k) * m + col]);
      }
      ASSERT_LE(std::abs(got - exact), OnceBound(exact, mag, terms, !rows64))
          << "enc[" << t << "][" << col << "] = " << got << ", host " << exact;
    }
}

TEST_P(CudaWideTest, DecodeIsTheFloat64ProductRoundedOnce) {
  const auto [N, c, n, acc] = GetParam();
  const bool rows64 = rows64_;
  const std::size_t m = m_, ld = m + 5;
  std::mt19937_64 rng(57 * N + c + n);
  const auto [E, D] = Matrices(rng);
  const auto g = RandomF32(n, rng);
  std::vector<double> obs = RandomF32(std::size_t(c) * ld, rng);
  if (rows64)  // observations with more than float32's digits, as a float64-state run has
    for (auto& o : obs) o += 0x1p-30 * o;
  DeviceArray g_dev(DType::kFloat32, n), obs_dev(row_type_, std::size_t(c) * ld);
  g_dev.Upload(g);
  obs_dev.Upload(obs);
  const double scale = 1.0 / N;
  for (const Piece& p : Pieces(n, m, c))
    backend_->Decode(DType::kFloat32, obs_dev.get(), ld, g_dev.get(), m, p.col0, p.cols, p.kc,
                     scale);
  const auto out = g_dev.Download();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = i / m, col = i % m;
    double exact = g[i], mag = std::abs(g[i]);
    for (int r = 0; r < c; ++r) {
      exact += D(Eigen::Index(k), r) * obs[std::size_t(r) * ld + col];
      mag += std::abs(D(Eigen::Index(k), r) * obs[std::size_t(r) * ld + col]);
    }
    ASSERT_LE(std::abs(out[i] - scale * exact), OnceBound(scale * exact, scale * mag, c + 2, true))
        << "g[" << i << "] = " << out[i] << ", host " << scale * exact;
  }
}

std::vector<WideCase> WideCases() {
  std::vector<WideCase> out;
  const std::pair<int, int> shapes[] = {{2, 1}, {2, 5}, {3, 7}, {4, 8}, {8, 24}};
  for (auto [N, c] : shapes)
    for (std::size_t n : {std::size_t(1), std::size_t(c + 1), std::size_t(1001),
                          std::size_t(100003)})
      for (Accumulation a : {Accumulation::kFloat64, Accumulation::kFloat64State})
        out.push_back({N, c, n, a});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaWideTest, testing::ValuesIn(WideCases()),
                         [](const testing::TestParamInfo<WideCase>& info) {
                           std::ostringstream s;
                           s << "N" << info.param.N << "_c" << info.param.c << "_n" << info.param.n
                             << (info.param.accumulation == Accumulation::kFloat64State
                                     ? "_state64"
                                     : "_acc64");
                           return s.str();
                         });

// The step against the host's detail::WideStepAt on the same values, bit for bit: every
// combination of present pointers (e_now, y_prev, e_back, feedback in and out, x, obs).
struct StepCase {
  bool rows64;
  std::size_t len;
};

class CudaWideStepTest : public testing::TestWithParam<StepCase>, protected CudaWideFixture {
 protected:
  void SetUp() override {
    CERAR_REQUIRE_GPU();
    Create();
  }
  void TearDown() override { Destroy(); }
};

template <typename S>
std::vector<S> As(const std::vector<double>& v) {
  return std::vector<S>(v.begin(), v.end());
}

template <typename S>
void Replay(int flags, const std::vector<double>& en, const std::vector<double>& yp,
            const std::vector<double>& eb, const std::vector<double>& fb, std::vector<double>& x,
            std::vector<double>& obs, std::vector<double>& fb_out) {
  const std::size_t n = en.size();
  auto en_s = As<S>(en), eb_s = As<S>(eb), fb_s = As<S>(fb), obs_s = As<S>(obs),
       fbo_s = As<S>(fb_out);
  auto yp_f = As<float>(yp), x_f = As<float>(x);
  for (std::size_t i = 0; i < n; ++i)
    detail::WideStepAt<S>(flags & 1 ? en_s.data() : nullptr, flags & 2 ? yp_f.data() : nullptr,
                          flags & 4 ? eb_s.data() : nullptr, flags & 8 ? fb_s.data() : nullptr,
                          flags & 16 ? x_f.data() : nullptr, flags & 32 ? obs_s.data() : nullptr,
                          flags & 64 ? fbo_s.data() : nullptr, i);
  x.assign(x_f.begin(), x_f.end());
  obs.assign(obs_s.begin(), obs_s.end());
  fb_out.assign(fbo_s.begin(), fbo_s.end());
}

TEST_P(CudaWideStepTest, EqualsTheHostStepForEveryPointerCombination) {
  const auto [rows64, len] = GetParam();
  const DType row_type = rows64 ? DType::kFloat64 : DType::kFloat32;
  backend_->SetMatrices(MatrixXd::Ones(3, 2), MatrixXd::Identity(2, 2));
  backend_->SetAccumulation(rows64 ? Accumulation::kFloat64State
                                   : Accumulation::kFloat64Feedback);
  std::mt19937_64 rng(len + (rows64 ? 7 : 0));
  auto wide = [&](std::vector<double> v) {
    if (rows64)
      for (auto& e : v) e += 0x1p-31 * e;  // digits float32 would lose
    return v;
  };
  const auto en = wide(RandomF32(len, rng)), yp = RandomF32(len, rng),
             eb = wide(RandomF32(len, rng));
  std::vector<double> fb(len);
  for (auto& f : fb) f = 0x1p-25 * RandomF32(1, rng)[0];  // sums of roundings: tiny
  DeviceArray en_d(row_type, len), yp_d(DType::kFloat32, len), eb_d(row_type, len),
      fb_d(row_type, len), x_d(DType::kFloat32, len), obs_d(row_type, len),
      fbo_d(row_type, len);
  en_d.Upload(en);
  yp_d.Upload(yp);
  eb_d.Upload(eb);
  fb_d.Upload(fb);
  for (int flags = 0; flags < 128; ++flags) {
    const double fill = 77.0;
    std::vector<double> x(len, fill), obs(len, fill), fb_out(len, fill);
    x_d.Upload(x);
    obs_d.Upload(obs);
    fbo_d.Upload(fb_out);
    backend_->StepWithFeedback(DType::kFloat32, flags & 1 ? en_d.get() : nullptr,
                               flags & 2 ? yp_d.get() : nullptr, flags & 4 ? eb_d.get() : nullptr,
                               flags & 8 ? fb_d.get() : nullptr, flags & 16 ? x_d.get() : nullptr,
                               flags & 32 ? obs_d.get() : nullptr,
                               flags & 64 ? fbo_d.get() : nullptr, len);
    const auto gx = x_d.Download(), gobs = obs_d.Download(), gfb = fbo_d.Download();
    if ((flags & (16 | 32)) == 0) {  // nothing to compute: nothing written
      for (std::size_t i = 0; i < len; ++i) ASSERT_EQ(gx[i], fill);
      continue;
    }
    if (rows64)
      Replay<double>(flags, en, yp, eb, fb, x, obs, fb_out);
    else
      Replay<float>(flags, en, yp, eb, fb, x, obs, fb_out);
    for (std::size_t i = 0; i < len; ++i) {
      ASSERT_EQ(gx[i], x[i]) << "x[" << i << "] flags " << flags;
      ASSERT_EQ(gobs[i], obs[i]) << "obs[" << i << "] flags " << flags;
      ASSERT_EQ(gfb[i], fb_out[i]) << "feedback[" << i << "] flags " << flags;
    }
  }
}

// The engine's layout with float64 rows: y(t) arrives in the upper half of the span its
// observation then fills (backend.h, StateElementBytes), and the step widens it in place. In
// parallel that is a race unless the back end stages y first; the result must be the host's
// sequential step on the original y. With float rows obs is y's own pointer (elementwise).
TEST_P(CudaWideStepTest, WidensTheReceivedVectorInPlace) {
  const auto [rows64, len] = GetParam();
  const DType row_type = rows64 ? DType::kFloat64 : DType::kFloat32;
  backend_->SetMatrices(MatrixXd::Ones(3, 2), MatrixXd::Identity(2, 2));
  backend_->SetAccumulation(rows64 ? Accumulation::kFloat64State : Accumulation::kFloat64);
  std::mt19937_64 rng(3 * len + 1);
  const auto en = RandomF32(len, rng), yp = RandomF32(len, rng), eb = RandomF32(len, rng);
  DeviceArray en_d(row_type, len), eb_d(row_type, len), span(row_type, len),
      x_d(DType::kFloat32, len);
  en_d.Upload(en);
  eb_d.Upload(eb);
  const auto y_bytes = test::Pack(DType::kFloat32, yp);
  char* y_dev = static_cast<char*>(span.get()) + (rows64 ? 4 * len : 0);
  span.Upload(std::vector<double>(len, 55.0));
  if (!y_bytes.empty())
    CERAR_CUDA_CHECK(cudaMemcpy(y_dev, y_bytes.data(), y_bytes.size(), cudaMemcpyHostToDevice));
  for (int pass = 0; pass < 2; ++pass) {  // the second reuses the grown scratch
    if (pass == 1 && !y_bytes.empty())
      CERAR_CUDA_CHECK(cudaMemcpy(y_dev, y_bytes.data(), y_bytes.size(), cudaMemcpyHostToDevice));
    CERAR_CUDA_CHECK(cudaDeviceSynchronize());
    backend_->Step(DType::kFloat32, en_d.get(), y_dev, eb_d.get(), x_d.get(), span.get(), len);
    const auto obs = span.Download(), x = x_d.Download();
    std::vector<double> rx(len), robs(len), unused(len);
    if (rows64)
      Replay<double>(1 | 2 | 4 | 16 | 32, en, yp, eb, unused, rx, robs, unused);
    else
      Replay<float>(1 | 2 | 4 | 16 | 32, en, yp, eb, unused, rx, robs, unused);
    for (std::size_t i = 0; i < len; ++i) {
      ASSERT_EQ(obs[i], robs[i]) << "obs[" << i << "] pass " << pass;
      ASSERT_EQ(x[i], rx[i]) << "x[" << i << "] pass " << pass;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, CudaWideStepTest,
                         testing::Values(StepCase{false, 1}, StepCase{false, 1000},
                                         StepCase{false, (std::size_t(1) << 20) + 5},
                                         StepCase{true, 1}, StepCase{true, 1000},
                                         StepCase{true, (std::size_t(1) << 20) + 5}),
                         [](const testing::TestParamInfo<StepCase>& info) {
                           return std::string(info.param.rows64 ? "state64" : "rows32") +
                                  "_len" + std::to_string(info.param.len);
                         });

// A wide accumulation on a bf16 buffer is refused before anything is enqueued.
TEST(CudaWideBackend, RefusesWideAccumulationOnLowPrecisionBuffers) {
  CERAR_REQUIRE_GPU();
  auto backend = CreateCudaBackend(nullptr);
  backend->SetMatrices(MatrixXd::Ones(2, 2), MatrixXd::Identity(2, 2));
  backend->SetAccumulation(Accumulation::kFloat64);
  DeviceArray buf(DType::kBFloat16, 16);
  EXPECT_THROW(backend->Step(DType::kBFloat16, buf.get(), buf.get(), buf.get(), buf.get(),
                             nullptr, 16),
               InvalidArgument);
  EXPECT_THROW(backend->Encode(DType::kBFloat16, buf.get(), 8, 0, 8, 2, {0, 2}, buf.get(), 8),
               InvalidArgument);
  EXPECT_THROW(backend->StepWithFeedback(DType::kFloat32, nullptr, nullptr, nullptr, nullptr,
                                         buf.get(), nullptr, nullptr, 4),
               InvalidArgument);  // kFloat64 feeds nothing back
}

}  // namespace
}  // namespace cerar
