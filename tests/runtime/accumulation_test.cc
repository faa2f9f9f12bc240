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
#include "cases.h"
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

// Accumulation::kFloat64Feedback: the names, and which back ends and dtypes feed back.
TEST(Feedback, NamesAndWhoFeedsBack) {
  EXPECT_EQ(ToString(Accumulation::kFloat64Feedback), "f64+feedback");
  EXPECT_EQ(ParseAccumulation("f64+feedback"), Accumulation::kFloat64Feedback);
  try {
    ParseAccumulation("feedback");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("buffer, f64 or f64+feedback"), std::string::npos)
        << e.what();
  }
  auto cpu = CreateCpuBackend();
  EXPECT_TRUE(cpu->SupportsAccumulation(DType::kFloat32, Accumulation::kFloat64Feedback));
  EXPECT_FALSE(cpu->FeedsBackRounding(DType::kFloat32));  // kBuffer until set
  cpu->SetAccumulation(Accumulation::kFloat64);
  EXPECT_FALSE(cpu->FeedsBackRounding(DType::kFloat32));
  cpu->SetAccumulation(Accumulation::kFloat64Feedback);
  EXPECT_TRUE(cpu->FeedsBackRounding(DType::kFloat32));
  EXPECT_FALSE(cpu->FeedsBackRounding(DType::kFloat64));  // float64 buffers: nothing to feed
  float v = 1;
  EXPECT_THROW(cpu->StepWithFeedback(DType::kFloat64, &v, &v, &v, &v, &v, nullptr, &v, 1),
               InvalidArgument);
  BufferOnlyBackend other;
  EXPECT_FALSE(other.FeedsBackRounding(DType::kFloat32));
  EXPECT_THROW(other.StepWithFeedback(DType::kFloat32, &v, &v, &v, &v, &v, nullptr, &v, 1),
               InvalidArgument);
}

// StepWithFeedback against a long-double reference, with the engine's aliasing (obs over y_prev,
// feedback_out over feedback_in): obs and x are the correctly rounded tmp and e_now + tmp, and
// feedback_out is feedback_in plus x's rounding error to float32 accuracy of that error.
TEST(Feedback, StepIsCorrectlyRoundedAndKeepsTheRoundingError) {
  const std::size_t n = 4099;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> e_now(n), y(n), e_back(n), fed(n), x(n);
  for (std::size_t i = 0; i < n; ++i) {
    e_now[i] = normal(rng);
    y[i] = 4 * normal(rng);
    e_back[i] = normal(rng);
    fed[i] = 1e-6f * normal(rng);
  }
  const std::vector<float> y0 = y, fed0 = fed;
  auto be = CreateCpuBackend();
  be->SetAccumulation(Accumulation::kFloat64Feedback);
  be->StepWithFeedback(DType::kFloat32, e_now.data(), y.data(), e_back.data(), fed.data(),
                       x.data(), y.data(), fed.data(), n);
  double worst_obs = 0, worst_x = 0, worst_fed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double tmp = (long double)y0[i] - e_back[i] + fed0[i];
    const long double sum = (long double)e_now[i] + tmp;
    worst_obs = std::max(worst_obs, UlpError(y[i], tmp));
    worst_x = std::max(worst_x, UlpError(x[i], sum));
    // The error x carries, added to what was fed: computed in float64 from exact terms, then
    // stored in float32, so within 2^-24 (and a little) of the terms' magnitude.
    const long double err = (long double)x[i] - sum;
    const long double want = fed0[i] + err;
    const long double size = std::fabs((long double)fed0[i]) + std::fabs(err);
    if (size > 0)
      worst_fed = std::max(worst_fed, double(std::fabs(fed[i] - want) / size));
  }
  EXPECT_LE(worst_obs, 0.5 + 1e-6);
  EXPECT_LE(worst_x, 0.5 + 1e-6);
  EXPECT_LE(worst_fed, 1.01 * 0x1p-24);
  EXPECT_GT(worst_fed, 0.0);  // the stored sums do round: the check can see an error
  // Without x nothing is fed (step L: only the last observation).
  std::vector<float> fed2 = fed0, y2 = y0;
  be->StepWithFeedback(DType::kFloat32, nullptr, y2.data(), e_back.data(), fed2.data(), nullptr,
                       y2.data(), nullptr, n);
  EXPECT_EQ(fed2, fed0);
}

// The engine with feedback (c > 2N): the same bytes, N more workspace rows, rank outputs within
// the rounding budget of the window formula, and a second Run on the same engine gives the
// first's result bit for bit (no feedback leaks from one run into the next).
TEST(Feedback, EngineSendsTheSameBytesAndRepeatsItself) {
  const Design d = test::RandomDesign(3, 7, 3);
  ASSERT_TRUE(FeedsBackRounding(d.N(), d.c()));
  const int N = d.N();
  const std::size_t count = 3001;
  for (Accumulation acc : {Accumulation::kFloat64, Accumulation::kFloat64Feedback}) {
    std::vector<std::vector<float>> first(N), second(N);
    std::vector<std::uint64_t> bytes(N);
    std::vector<std::size_t> workspace(N);
    std::vector<double> err(N), scale(N);
    auto errors = RunInProcess(N, [&](Transport& tr) {
      const int j = tr.rank();
      const auto g = test::Inputs<float>(N, count, 9);
      auto be = CreateCpuBackend();
      AllReduceOptions o;
      o.accumulation = acc;
      o.segment_bytes = 1024;  // several segments per round
      CodedAllReduce ar(d, tr, *be, count, o);
      first[j] = g[j];
      tr.ResetCounters();
      ar.Run(first[j].data());
      bytes[j] = tr.bytes_sent();
      workspace[j] = ar.workspace_bytes();
      second[j] = g[j];
      ar.Run(second[j].data());
      const auto ref = test::Reference(d, g, j, &scale[j]);
      err[j] = test::DiffNorm(first[j], ref);
    });
    for (auto& e : errors)
      if (e) ADD_FAILURE() << ExceptionMessage(e);
    const std::size_t m = (count + d.c() - 1) / d.c();
    const std::size_t plain = test::CodedWorkspaceBytes(N, d.c(), count, 4, 1024);
    for (int j = 0; j < N; ++j) {
      SCOPED_TRACE(ToString(acc) + ", rank " + std::to_string(j));
      EXPECT_EQ(bytes[j], std::uint64_t(d.L()) * m * 4);
      EXPECT_EQ(workspace[j],
                plain + (acc == Accumulation::kFloat64Feedback ? std::size_t(N) * m * 4 : 0));
      EXPECT_EQ(first[j], second[j]);
      // Feedback adds each rounding back at most ceil(L / N) times.
      EXPECT_LE(err[j] / scale[j], (1 + (d.L() + N - 1) / N) * test::CodedTolerance(d, 0x1p-24));
    }
  }
}

// With c <= 2N feedback is off (FeedsBackRounding): the run is the float64-accumulation one, bit
// for bit, in the same workspace.
TEST(Feedback, OffWhereTheDesignHasTwoLapsOrFewer) {
  const Design d = test::RandomDesign(4, 8, 5);
  ASSERT_FALSE(FeedsBackRounding(d.N(), d.c()));
  SimulateOptions o;
  o.count = 5000;
  o.run_ring = false;
  o.accumulation = Accumulation::kFloat64;
  const SimulateResult wide = Simulate(d, o);
  o.accumulation = Accumulation::kFloat64Feedback;
  const SimulateResult fed = Simulate(d, o);
  EXPECT_EQ(fed.err_per_rank, wide.err_per_rank);
  EXPECT_EQ(fed.workspace_bytes, wide.workspace_bytes);
}

}  // namespace
}  // namespace cerar
