// Accumulation::kFloat64 (backend.h): a float32 run computes encode, ring step and decode in
// float64 and rounds each stored result once. Checked against long-double references: every
// result is the correctly rounded value (within half an ulp), which the float32 path is not; the
// engine sends the same bytes and its error drops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/inprocess.h"
#include "cerar/runtime/simulate.h"
#include "test_designs.h"

namespace cerar {
namespace {

// |got - ref| in units of ulp(fl32(ref)): at most 0.5 for a correctly rounded result.
double UlpError(float got, long double ref) {
  const float r = static_cast<float>(ref);
  const double ulp = std::nextafter(std::fabs(r), INFINITY) - std::fabs(r);
  return double(std::fabs(static_cast<long double>(got) - ref)) / ulp;
}

struct Matrices {
  MatrixXd E, D;
};

Matrices RandomMatrices(int L, int c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Matrices m{MatrixXd(L, c), MatrixXd(c, c)};
  for (int i = 0; i < L * c; ++i) m.E.data()[i] = u(rng);
  for (int i = 0; i < c * c; ++i) m.D.data()[i] = u(rng);
  return m;
}

// Worst ulp error of Encode then Decode on float32 buffers, strided rows, a padded tail (kc < c)
// and more columns than one of the back end's column blocks (16 KiB of float64 per row).
double WorstUlpOfEncodeAndDecode(Accumulation accumulation) {
  const int L = 9, c = 7, kc = 6;
  const std::size_t m = 5000, ld = 5003, col0 = 17, cols = 4900;
  const Matrices mat = RandomMatrices(L, c, 11);
  auto be = CreateCpuBackend();
  be->SetMatrices(mat.E, mat.D);
  be->SetAccumulation(accumulation);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> g(c * m), enc(L * ld, -7.0f), obs(c * ld);
  for (auto& v : g) v = normal(rng);
  for (auto& v : obs) v = normal(rng);
  be->Encode(DType::kFloat32, g.data(), m, col0, cols, kc, {0, L}, enc.data(), ld);
  std::vector<float> out = g;
  be->Decode(DType::kFloat32, obs.data(), ld, out.data(), m, col0, cols, kc, 0.125);
  double worst = 0;
  for (int t = 0; t < L; ++t)
    for (std::size_t col = 0; col < ld; ++col) {
      const float got = enc[t * ld + col];
      if (col < col0 || col >= col0 + cols) {
        EXPECT_EQ(got, -7.0f) << "encode wrote outside its columns";
        continue;
      }
      long double ref = 0;
      for (int k = 0; k < kc; ++k) ref += (long double)mat.E(t, k) * g[k * m + col];
      worst = std::max(worst, UlpError(got, ref));
    }
  for (int k = 0; k < c; ++k)
    for (std::size_t col = 0; col < m; ++col) {
      const std::size_t i = k * m + col;
      if (k >= kc || col < col0 || col >= col0 + cols) {
        EXPECT_EQ(out[i], g[i]) << "decode wrote padding or outside its columns";
        continue;
      }
      long double ref = g[i];
      for (int r = 0; r < c; ++r) ref += (long double)mat.D(k, r) * obs[r * ld + col];
      worst = std::max(worst, UlpError(out[i], 0.125L * ref));
    }
  return worst;
}

TEST(Accumulation, Float64EncodeAndDecodeRoundEachResultOnce) {
  EXPECT_LE(WorstUlpOfEncodeAndDecode(Accumulation::kFloat64), 0.5 + 1e-6);
  // The float32 path rounds products and partial sums: the same check fails there.
  EXPECT_GT(WorstUlpOfEncodeAndDecode(Accumulation::kBuffer), 0.6);
}

TEST(Accumulation, Float64StepRoundsTheSentVectorOnceAndAllowsAliasing) {
  const std::size_t n = 1001;
  std::mt19937 rng(8);
  std::normal_distribution<float> normal;
  std::vector<float> en(n), y(n), eb(n), x(n), obs(n);
  for (std::size_t i = 0; i < n; ++i) {
    en[i] = normal(rng);
    y[i] = 1000.0f * normal(rng);
    eb[i] = 1000.0f * normal(rng);
  }
  auto be = CreateCpuBackend();
  be->SetMatrices(MatrixXd::Zero(2, 2), MatrixXd::Zero(2, 2));
  be->SetAccumulation(Accumulation::kFloat64);
  std::vector<float> yy = y;  // the observation in place of the received vector
  be->Step(DType::kFloat32, en.data(), yy.data(), eb.data(), x.data(), yy.data(), n);
  int differs_from_two_roundings = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double tmp = (long double)y[i] - eb[i];
    EXPECT_EQ(yy[i], static_cast<float>(tmp)) << i;
    EXPECT_EQ(x[i], static_cast<float>(en[i] + tmp)) << i;
    if (x[i] != en[i] + (y[i] - eb[i])) ++differs_from_two_roundings;  // the float32 path
  }
  EXPECT_GT(differs_from_two_roundings, 0);
  // The ring's in-place add (x aliases y_prev, no observation) and null operands.
  std::vector<float> acc = y;
  be->Step(DType::kFloat32, en.data(), acc.data(), nullptr, acc.data(), nullptr, n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(acc[i], static_cast<float>((long double)en[i] + y[i]));
  be->Step(DType::kFloat32, nullptr, nullptr, eb.data(), x.data(), nullptr, n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(x[i], -eb[i]);
}

TEST(Accumulation, Names) {
  EXPECT_EQ(ToString(Accumulation::kBuffer), "buffer");
  EXPECT_EQ(ToString(Accumulation::kFloat64), "f64");
  EXPECT_EQ(ParseAccumulation("f64"), Accumulation::kFloat64);
  try {
    ParseAccumulation("f128");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'f128'"), std::string::npos) << e.what();
  }
}

// A back end that knows nothing about accumulation keeps ComputeBackend's default: kBuffer only.
class BufferOnlyBackend final : public ComputeBackend {
 public:
  MemorySpace memory_space() const override { return MemorySpace::kHost; }
  bool Supports(DType dtype) const override { return dtype == DType::kFloat32; }
  void* Allocate(std::size_t) override { return nullptr; }
  void Free(void*) override {}
  void SetMatrices(const MatrixXd&, const MatrixXd&) override {}
  void Encode(DType, const void*, std::size_t, std::size_t, std::size_t, int, RowRange, void*,
              std::size_t) override {}
  void Step(DType, const void*, const void*, const void*, void*, void*, std::size_t) override {}
  void Decode(DType, const void*, std::size_t, void*, std::size_t, std::size_t, std::size_t, int,
              double) override {}
  void Scale(DType, void*, std::size_t, double) override {}
};

TEST(Accumulation, AnUnsupportedAccumulationIsRejectedBeforeAnyCommunication) {
  const Design d = test::RandomDesign(2, 2, 1);
  InProcessWorld w(2);
  auto tr = w.MakeTransport(0);
  BufferOnlyBackend be;
  EXPECT_FALSE(be.SupportsAccumulation(DType::kFloat32, Accumulation::kFloat64));
  EXPECT_THROW(be.SetAccumulation(Accumulation::kFloat64), InvalidArgument);
  AllReduceOptions o;
  o.accumulation = Accumulation::kFloat64;
  try {
    CodedAllReduce(d, *tr, be, 10, o);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("accumulation f64 on dtype f32"), std::string::npos)
        << e.what();
  }
}

// End to end on an exact design (error = rounding only): same bytes, smaller error in float32,
// and float64 buffers unchanged (the wide path is the float64 one).
TEST(Accumulation, Float64AccumulationLowersTheErrorOfAFloat32RunAtEqualBytes) {
  const Design d = test::FourierDesign(8, 8);
  SimulateOptions o;
  o.count = 1 << 16;
  o.run_ring = false;
  const SimulateResult plain = Simulate(d, o);
  o.accumulation = Accumulation::kFloat64;
  const SimulateResult wide = Simulate(d, o);
  EXPECT_EQ(wide.bytes_sent_per_rank, plain.bytes_sent_per_rank);
  EXPECT_EQ(wide.workspace_bytes, plain.workspace_bytes);
  EXPECT_LT(wide.measured_err_rms, 0.8 * plain.measured_err_rms)
      << "plain " << plain.measured_err_rms << ", wide " << wide.measured_err_rms;
  EXPECT_GT(wide.measured_err_rms, 0.0);
  o.dtype = DType::kFloat64;
  const SimulateResult wide64 = Simulate(d, o);
  o.accumulation = Accumulation::kBuffer;
  const SimulateResult plain64 = Simulate(d, o);
  EXPECT_EQ(wide64.err_per_rank, plain64.err_per_rank);
}

}  // namespace
}  // namespace cerar
