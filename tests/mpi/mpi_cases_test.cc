// The all-reduce cases of tests/runtime on the MPI transport: run by ctest under
// `mpiexec -n K` for K = 2, 3, 4, 5 (N = K). Same checks as the in-process tests: the window
// formula to rounding, exact designs, bytes L ceil(n/c) sizeof(T), the exact ring, and errors
// on every rank for a wrong-size design or different counts. And the transport's interrupt check.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

#include "cases.h"
#include "checking_transport.h"
#include "cerar/errors.h"
#include "cerar/runtime/mpi_transport.h"
#include "mpi_main.h"

namespace cerar {
namespace {

Transport& World() {
  static std::unique_ptr<Transport> t = [] {
    MpiTransportOptions o;
    o.timeout_s = 60;
    return CreateMpiTransport(MPI_COMM_WORLD, o);
  }();
  return *t;
}

int Size() { return World().size(); }

struct Case {
  int c;
  std::size_t count;
  bool f32;
  std::size_t segment_bytes;
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  // counts: 0, 1, fewer than c (c - 1 = 2, 3, 5, 10), not divisible by c, large.
  for (int c : {1, 2, 3, 4, 6, 11})
    for (auto [n, seg] : std::vector<std::pair<std::size_t, std::size_t>>{
             {0, 1 << 20}, {1, 1 << 20}, {std::size_t(c > 2 ? c - 1 : 3), 1 << 20},
             {1003, 64}, {20011, 4096}})
      for (bool f32 : {false, true}) out.push_back({c, n, f32, seg});
  return out;
}

class MpiCoded : public ::testing::TestWithParam<Case> {};

TEST_P(MpiCoded, MatchesTheWindowFormulaAndCountsBytes) {
  const Case p = GetParam();
  const int N = Size();
  const Design d = test::RandomDesign(N, p.c, 500 + p.c);  // same seed: same design everywhere
  // MPI's eager protocol copies small sends at once, so only the checker sees a send slot
  // rewritten while its exchange is in flight.
  test::CheckingTransport ck(World());
  const test::RankOutcome r =
      p.f32 ? test::CodedCase<float>(ck, d, p.count, 7, p.segment_bytes)
            : test::CodedCase<double>(ck, d, p.count, 7, p.segment_bytes);
  EXPECT_EQ(ck.overlaps, 0);
  EXPECT_EQ(ck.redundant_waits, 0);
  EXPECT_LE(ck.max_in_flight, std::size_t(kDefaultSendSlots));
  EXPECT_EQ(ck.completed(), ck.started());
  EXPECT_LE(r.err, r.tol * r.scale) << "rank " << World().rank();
  EXPECT_EQ(r.bytes, r.expected_bytes);
  EXPECT_EQ(r.workspace, r.expected_workspace);
}

INSTANTIATE_TEST_SUITE_P(Grid, MpiCoded, ::testing::ValuesIn(Cases()),
                         [](const auto& param_info) {
                           const Case& p = param_info.param;
                           return "c" + std::to_string(p.c) + "_n" + std::to_string(p.count) +
                                  (p.f32 ? "_f32" : "_f64");
                         });

TEST(Mpi, ExactDesignGivesTheExactSum) {
  const int N = Size();
  const Design d = test::FourierDesign(N, N);  // c = N: exact
  ASSERT_LT(test::MaxExactnessDefect(d), 1e-12);
  const std::size_t count = 5003;
  const auto g = test::Inputs<double>(N, count, 9);
  std::vector<double> buf = g[World().rank()];
  auto be = CreateCpuBackend();
  AllReduceOptions o;
  o.dtype = DType::kFloat64;
  o.segment_bytes = 800;
  CodedAllReduce ar(d, World(), *be, count, o);
  ar.Run(buf.data());
  std::vector<long double> exact(count, 0.0L);
  double scale = 0;
  for (const auto& gi : g) {
    for (std::size_t k = 0; k < count; ++k) exact[k] += gi[k];
    scale += test::DiffNorm(gi, std::vector<long double>(count, 0.0L));
  }
  EXPECT_LE(test::DiffNorm(buf, exact), 2.5 * test::CodedTolerance(d, 0x1p-53) * scale);
}

TEST(Mpi, RingIsExactAndCountsBytes) {
  for (std::size_t count : {0, 1, 7, 1003, 20011})
    for (std::size_t seg : {64, 1 << 20}) {
      const test::RankOutcome r = test::RingCase<float>(World(), count, 3, seg);
      EXPECT_LE(r.err, r.tol * r.scale) << "count " << count;
      EXPECT_EQ(r.bytes, r.expected_bytes) << "count " << count;
    }
}

TEST(Mpi, DesignForAnotherSizeFailsOnEveryRank) {
  const Design d = test::RandomDesign(Size() + 1, 3, 1);
  auto be = CreateCpuBackend();
  try {
    CodedAllReduce ar(d, World(), *be, 100, {});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("design is for N = " + std::to_string(Size() + 1) +
                                         " ranks but the transport has " +
                                         std::to_string(Size()) + " ranks"),
              std::string::npos)
        << e.what();
  }
}

TEST(Mpi, DifferentCountsFailOnEveryRank) {
  const Design d = test::RandomDesign(Size(), 3, 1);
  auto be = CreateCpuBackend();
  const std::size_t count = World().rank() == Size() - 1 ? 99 : 100;
  try {
    CodedAllReduce ar(d, World(), *be, count, {});
    ADD_FAILURE() << "no error";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("ranks disagree on element count: rank 0 has 100, rank " +
                                         std::to_string(Size() - 1) + " has 99"),
              std::string::npos)
        << e.what();
  }
}

// The interrupt check (MpiTransportOptions::interrupt_check): what it throws ends a wait whose
// peers never come, long before the timeout, nested in the TransportError; the transport then
// refuses further work, as after a timeout. Without the check, the wait ran into the timeout.
struct Stop : std::runtime_error {
  Stop() : std::runtime_error("stop (test)") {}
};

// A world transport whose check runs every 20 ms and throws Stop at its third call.
std::unique_ptr<Transport> InterruptibleTransport(int& calls) {
  MpiTransportOptions o;
  o.timeout_s = 20;  // far beyond the check's 60 ms: a wait that ends here fails the time bound
  o.interrupt_every_s = 0.02;
  o.interrupt_check = [&calls] {
    if (++calls == 3) throw Stop();
  };
  return CreateMpiTransport(MPI_COMM_WORLD, o);
}

// Rank 0 runs `wait`, which its peers never join.
void ExpectInterrupted(Transport& t, const int& calls, const std::string& waiting_for,
                       const std::function<void()>& wait) {
  const auto start = std::chrono::steady_clock::now();
  bool nested = false;
  try {
    wait();
    ADD_FAILURE() << "no error";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: interrupted while waiting for " + waiting_for +
                                         " (MPI transport; the interrupt check raised stop "
                                         "(test))"),
              std::string::npos)
        << e.what();
    try {
      std::rethrow_if_nested(e);
    } catch (const Stop&) {
      nested = true;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(nested) << "the check's exception is not nested in the TransportError";
  EXPECT_EQ(calls, 3);
  EXPECT_LT(seconds, 10.0);
  static char buffer[8];  // a refused exchange posts nothing, but keep it alive all the same
  try {
    t.StartExchange(buffer, buffer, sizeof buffer);
    ADD_FAILURE() << "the interrupted transport accepted an exchange";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("unusable after an earlier failure: rank 0: "
                                         "interrupted while waiting for " + waiting_for),
              std::string::npos)
        << e.what();
  }
}

TEST(Mpi, InterruptCheckEndsAWait) {
  int calls = 0;
  const auto t = InterruptibleTransport(calls);
  if (t->rank() == 0) {
    // Static: the send may still be in flight after the failure (MPI_Request_free).
    static char send[8] = {1}, recv[8];
    ExpectInterrupted(*t, calls, "exchange 0", [&] {
      t->Wait(t->StartExchange(send, recv, sizeof send));
    });
  }
  EXPECT_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  if (t->rank() != 0) {
    EXPECT_EQ(calls, 0);  // no wait, no check
  }
}

TEST(Mpi, InterruptCheckEndsAnAgreementCheck) {
  int calls = 0;
  const auto t = InterruptibleTransport(calls);
  if (t->rank() == 0)
    ExpectInterrupted(*t, calls, "the check of test value",
                      [&] { t->CheckAgreement("test value", 1); });
  EXPECT_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
}

TEST(Mpi, InterruptIntervalMustBePositive) {
  MpiTransportOptions o;
  o.interrupt_every_s = 0;
  try {
    CreateMpiTransport(MPI_COMM_WORLD, o);
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("MPI transport: interrupt_every_s 0.000000 s, expected "
                                         "> 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cerar

int main(int argc, char** argv) { return RunMpiTests(argc, argv); }
