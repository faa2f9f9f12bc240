// Bad input and faults on the in-process transport: every rank gets a clear error, nothing
// hangs. NaN/Inf inputs: no crash, and exactly the affected columns become NaN.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "test_designs.h"

namespace cerar {
namespace {

using Clock = std::chrono::steady_clock;

bool Contains(const std::exception_ptr& e, const std::string& s) {
  return ExceptionMessage(e).find(s) != std::string::npos;
}

// `call` throws InvalidArgument with `words` in its text.
template <typename Call>
void ExpectRefused(Call call, const std::string& words) {
  try {
    call();
    ADD_FAILURE() << "accepted: " << words;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Faults, DesignForOtherSizeFailsOnEveryRank) {
  const Design d = test::RandomDesign(3, 4, 1);
  auto errors = RunInProcess(2, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    CodedAllReduce ar(d, tr, *be, 100, {});
  });
  for (auto& e : errors) {
    ASSERT_TRUE(e);
    EXPECT_TRUE(Contains(e, "design is for N = 3 ranks but the transport has 2 ranks"))
        << ExceptionMessage(e);
  }
}

TEST(Faults, DifferentCountsFailOnEveryRank) {
  const Design d = test::RandomDesign(3, 4, 1);
  auto errors = RunInProcess(3, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    CodedAllReduce ar(d, tr, *be, tr.rank() == 1 ? 101 : 100, {});
  });
  for (auto& e : errors) {
    ASSERT_TRUE(e);
    EXPECT_TRUE(Contains(e, "ranks disagree on element count: rank 0 has 100, rank 1 has 101"))
        << ExceptionMessage(e);
  }
}

// Coded on one rank and the exact ring on the others: the first check names the algorithm (it
// once compared rank 0's design fingerprint with the others' element count).
TEST(Faults, DifferentAlgorithmsFailOnEveryRankNamingThem) {
  const Design d = test::RandomDesign(3, 4, 1);
  auto errors = RunInProcess(3, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    if (tr.rank() == 0)
      CodedAllReduce ar(d, tr, *be, 100, {});
    else
      RingAllReduce ar(tr, *be, 100, {});
  });
  for (auto& e : errors) {
    ASSERT_TRUE(e);
    EXPECT_TRUE(Contains(e, "ranks disagree on all-reduce algorithm (0 = exact ring, 1 = coded): "
                            "rank 0 has 1, rank 1 has 0"))
        << ExceptionMessage(e);
  }
}

TEST(Faults, DifferentDesignsFailOnEveryRank) {
  const Design a = test::RandomDesign(3, 4, 1), b = test::RandomDesign(3, 4, 2);
  auto errors = RunInProcess(3, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    CodedAllReduce ar(tr.rank() == 2 ? b : a, tr, *be, 100, {});
  });
  for (auto& e : errors) EXPECT_TRUE(Contains(e, "ranks disagree on design fingerprint"));
}

// Matrices beyond the buffer type's range would be inf in the back end's copy: refused on every
// rank by name, while the same design runs with float64 buffers (the matrices stay float64).
TEST(Faults, MatricesBeyondTheBufferTypeFailOnEveryRank) {
  const Design base = test::RandomDesign(3, 4, 3);
  DesignParts p;
  p.N = 3;
  p.c = 4;
  for (int i = 0; i < 3; ++i) {
    p.encoders.push_back(base.encoder(i) * 1e60);
    p.decoders.push_back(base.decoder(i) * 1e-60);
  }
  p.provenance.construction = "random";
  const Design big = Design::Create(std::move(p), "scaled");
  auto errors = RunInProcess(3, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    CodedAllReduce ar(big, tr, *be, 100, {});
  });
  for (auto& e : errors)
    EXPECT_TRUE(Contains(e, "E[0] has an entry of magnitude")) << ExceptionMessage(e);
  for (auto& e : errors) EXPECT_TRUE(Contains(e, "beyond f32's largest")) << ExceptionMessage(e);
  AllReduceOptions o;
  o.dtype = DType::kFloat64;
  errors = RunInProcess(3, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    std::vector<double> scaled(100), plain(100);
    for (int k = 0; k < 100; ++k) scaled[k] = plain[k] = std::sin(k + 10.0 * tr.rank());
    CodedAllReduce(big, tr, *be, 100, o).Run(scaled.data());
    CodedAllReduce(base, tr, *be, 100, o).Run(plain.data());
    for (int k = 0; k < 100; ++k) ASSERT_NEAR(scaled[k], plain[k], 1e-12) << k;
  });
  for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
}

TEST(Faults, BadOptionsAreRejectedBeforeAnyCommunication) {
  const Design d = test::RandomDesign(2, 2, 1);
  InProcessWorld w(2);
  auto tr = w.MakeTransport(0);
  auto be = CreateCpuBackend();
  AllReduceOptions o;
  o.dtype = DType::kBFloat16;
  EXPECT_THROW(CodedAllReduce(d, *tr, *be, 10, o), InvalidArgument);
  o.dtype = DType::kFloat32;
  o.segment_bytes = 2;
  EXPECT_THROW(CodedAllReduce(d, *tr, *be, 10, o), InvalidArgument);
  o.segment_bytes = AllReduceOptions{}.segment_bytes;
  o.send_slots = 0;
  ExpectRefused([&] { CodedAllReduce(d, *tr, *be, 10, o); },
                "coded all-reduce: send_slots = 0, expected >= 1");
  ExpectRefused([&] { RingAllReduce(*tr, 10, o); },
                "ring all-reduce: send_slots = 0, expected >= 1");
}

// A null buffer for a non-empty run is refused on the rank that passes it, before it sends;
// count 0 takes no buffer.
TEST(Faults, NullBufferForACountIsRefused) {
  const Design d = test::RandomDesign(2, 2, 1);
  auto errors = RunInProcess(2, [&](Transport& tr) {
    auto be = CreateCpuBackend();
    CodedAllReduce coded(d, tr, *be, 10);
    RingAllReduce ring(tr, 10);
    ExpectRefused([&] { coded.Run(nullptr); }, "coded all-reduce: null buffer for count 10");
    ExpectRefused([&] { ring.Run(nullptr); }, "ring all-reduce: null buffer for count 10");
    EXPECT_EQ(tr.bytes_sent(), 0u);
    CodedAllReduce(d, tr, *be, 0).Run(nullptr);
    RingAllReduce(tr, 0).Run(nullptr);
  });
  for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
}

// Wraps a transport; after `after` exchanges it throws (a crashing rank) or stops quietly (a
// rank that dies without a word).
struct Stop {};
class FaultyTransport : public Transport {
 public:
  FaultyTransport(Transport& inner, int after, bool silent)
      : in_(inner), after_(after), silent_(silent) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  Handle StartExchange(const void* s, void* r, std::size_t b) override {
    if (calls_++ == after_) {
      if (silent_) throw Stop{};
      throw NumericalError("injected failure at exchange " + std::to_string(after_));
    }
    return in_.StartExchange(s, r, b);
  }
  void Wait(Handle h) override { in_.Wait(h); }
  void Finish() override { in_.Finish(); }
  bool MayStillWrite() const override { return in_.MayStillWrite(); }
  void CheckAgreement(const std::string& w, std::uint64_t v) override { in_.CheckAgreement(w, v); }
  std::uint64_t bytes_sent() const override { return in_.bytes_sent(); }
  void ResetCounters() override { in_.ResetCounters(); }

 private:
  Transport& in_;
  int after_, calls_ = 0;
  bool silent_;
};

std::vector<std::exception_ptr> RunWithFaultyRank(int bad_rank, bool silent, double timeout_s,
                                                  double* seconds) {
  const Design d = test::RandomDesign(4, 6, 3);
  InProcessOptions o;
  o.timeout_s = timeout_s;
  const auto t0 = Clock::now();
  auto errors = RunInProcess(4, [&](Transport& tr) {
    FaultyTransport ft(tr, tr.rank() == bad_rank ? 5 : 1 << 30, silent);
    std::vector<float> buf(6000, 1.0f);
    auto be = CreateCpuBackend();
    AllReduceOptions ao;
    ao.segment_bytes = 1024;
    CodedAllReduce ar(d, ft, *be, buf.size(), ao);
    try {
      ar.Run(buf.data());
    } catch (const Stop&) {
      // The rank "dies": returns without telling anybody.
    }
  }, o);
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return errors;
}

TEST(Faults, ThrowingRankMakesThePeersFailNamingIt) {
  double secs = 0;
  auto errors = RunWithFaultyRank(1, false, 60, &secs);
  EXPECT_LT(secs, 10.0) << "peers must not wait for the timeout";
  EXPECT_TRUE(Contains(errors[1], "injected failure at exchange 5"));
  for (int r : {0, 2, 3}) {
    ASSERT_TRUE(errors[r]) << "rank " << r;
    EXPECT_TRUE(Contains(errors[r], "rank 1 failed: injected failure"))
        << ExceptionMessage(errors[r]);
  }
}

TEST(Faults, DeadRankMakesTheSuccessorTimeOutNamingIt) {
  double secs = 0;
  auto errors = RunWithFaultyRank(1, true, 2.0, &secs);
  EXPECT_LT(secs, 10.0);
  EXPECT_FALSE(errors[1]);
  ASSERT_TRUE(errors[2]);
  EXPECT_TRUE(Contains(errors[2], "rank 2: no data from rank 1 for 2 s"))
      << ExceptionMessage(errors[2]);
  for (int r : {0, 3}) EXPECT_TRUE(errors[r]) << "rank " << r << " must fail, not hang";
}

// NaN or Inf in one rank's input: no crash. All operations act column by column, so exactly the
// elements k m + col of the poisoned column col become NaN on every rank; all other elements
// are bit-for-bit those of a clean run.
class NonFiniteTest : public ::testing::TestWithParam<double> {};

TEST_P(NonFiniteTest, PoisonsExactlyOneColumnOnEveryRank) {
  const int N = 4, c = 6;
  const std::size_t count = 1000, m = (count + c - 1) / c, poisoned = 3 * m + 17;  // column 17
  const Design d = test::RandomDesign(N, c, 8);
  auto run = [&](bool poison) {
    std::vector<std::vector<double>> out(N);
    auto errors = RunInProcess(N, [&](Transport& tr) {
      auto g = test::Inputs<double>(N, count, 2)[tr.rank()];
      if (poison && tr.rank() == 2) g[poisoned] = GetParam();
      AllReduceOptions o;
      o.dtype = DType::kFloat64;
      o.segment_bytes = 128;
      auto be = CreateCpuBackend();
      CodedAllReduce ar(d, tr, *be, count, o);
      ar.Run(g.data());
      out[tr.rank()] = g;
    });
    for (auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
    return out;
  };
  const auto clean = run(false), dirty = run(true);
  for (int j = 0; j < N; ++j)
    for (std::size_t k = 0; k < count; ++k) {
      if (k % m == poisoned % m)
        EXPECT_TRUE(std::isnan(dirty[j][k])) << "rank " << j << " element " << k;
      else
        ASSERT_EQ(dirty[j][k], clean[j][k]) << "rank " << j << " element " << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Values, NonFiniteTest,
                         ::testing::Values(std::nan(""), INFINITY, -INFINITY));

}  // namespace
}  // namespace cerar
