// In-process transport: ring exchange in order, byte counts, agreement checks, and faults
// (timeouts naming the peer, abort when a rank throws) — errors, never hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <numeric>
#include <thread>

#include "cerar/errors.h"
#include "cerar/runtime/inprocess.h"

namespace cerar {
namespace {

using Clock = std::chrono::steady_clock;

class InProcessRing : public ::testing::TestWithParam<int> {};

TEST_P(InProcessRing, ExchangesArriveInOrderFromThePredecessor) {
  const int N = GetParam();
  const int rounds = 5;
  auto errors = RunInProcess(N, [&](Transport& tr) {
    const int r = tr.rank();
    ASSERT_EQ(tr.size(), N);
    std::vector<std::vector<int>> send(rounds), recv(rounds);
    std::vector<Transport::Handle> h;
    for (int k = 0; k < rounds; ++k) {
      send[k].assign(k + 1, 100 * r + k);  // different size each exchange
      recv[k].assign(k + 1, -1);
      h.push_back(tr.StartExchange(send[k].data(), recv[k].data(), (k + 1) * sizeof(int)));
    }
    tr.Wait(h.back());  // completes every earlier handle too
    for (int k = 0; k < rounds; ++k)
      for (int v : recv[k]) EXPECT_EQ(v, 100 * ((r + N - 1) % N) + k);
    EXPECT_EQ(tr.bytes_sent(), sizeof(int) * rounds * (rounds + 1) / 2);
    tr.ResetCounters();
    EXPECT_EQ(tr.bytes_sent(), 0u);
  });
  for (int r = 0; r < N; ++r) EXPECT_FALSE(errors[r]) << ExceptionMessage(errors[r]);
}
INSTANTIATE_TEST_SUITE_P(Sizes, InProcessRing, ::testing::Values(1, 2, 3, 5, 8));

TEST(InProcess, AgreementPassesAndFailsOnEveryRank) {
  auto ok = RunInProcess(3, [](Transport& tr) {
    tr.CheckAgreement("count", 42);
    tr.CheckAgreement("count", 43);  // a second check is a new generation
  });
  for (auto& e : ok) EXPECT_FALSE(e) << ExceptionMessage(e);
  auto bad = RunInProcess(3, [](Transport& tr) {
    tr.CheckAgreement("element count", tr.rank() == 2 ? 7 : 8);
  });
  for (auto& e : bad) {
    ASSERT_TRUE(e);
    EXPECT_NE(ExceptionMessage(e).find("ranks disagree on element count: rank 0 has 8, rank 2 "
                                       "has 7"),
              std::string::npos)
        << ExceptionMessage(e);
  }
}

TEST(InProcess, SilentPeerTimesOutNamingIt) {
  InProcessOptions o;
  o.timeout_s = 1;  // 0.3 s: a thread stalled that long on a loaded machine made rank 0 fail first
  const auto t0 = Clock::now();
  auto errors = RunInProcess(3, [](Transport& tr) {
    if (tr.rank() == 1) return;  // rank 1 never sends
    int s = 1, r = 0;
    tr.Wait(tr.StartExchange(&s, &r, sizeof s));
  }, o);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(secs, 5.0);
  ASSERT_TRUE(errors[2]);
  EXPECT_NE(ExceptionMessage(errors[2]).find("rank 2: no data from rank 1 for 1 s"),
            std::string::npos)
      << ExceptionMessage(errors[2]);
  EXPECT_FALSE(errors[1]);
}

TEST(InProcess, ThrowingRankAbortsItsPeersQuickly) {
  InProcessOptions o;
  o.timeout_s = 60;  // the abort flag, not the timeout, must end the others
  const auto t0 = Clock::now();
  auto errors = RunInProcess(4, [](Transport& tr) {
    if (tr.rank() == 2) throw InvalidArgument("injected failure");
    int s = 1, r = 0;
    for (int k = 0; k < 3; ++k) tr.Wait(tr.StartExchange(&s, &r, sizeof s));
  }, o);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0);
  EXPECT_EQ(ExceptionMessage(errors[2]), "injected failure");
  // Rank 3 waits for rank 2 and must be told why.
  ASSERT_TRUE(errors[3]);
  EXPECT_NE(ExceptionMessage(errors[3]).find("rank 2 failed: injected failure"), std::string::npos)
      << ExceptionMessage(errors[3]);
}

// inf, or a timeout past the clock's range (now + 1e10 s overflows steady_clock's nanoseconds),
// waits without limit: a late peer is waited for, not timed out at once, and a failing peer
// still ends the wait through the abort flag.
TEST(InProcess, TimeoutsPastTheClocksRangeWaitForALatePeer) {
  for (double timeout_s : {1e10, std::numeric_limits<double>::infinity()}) {
    InProcessOptions o;
    o.timeout_s = timeout_s;
    auto late = RunInProcess(3, [](Transport& tr) {
      if (tr.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      tr.CheckAgreement("count", 5);
      if (tr.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      int s = tr.rank(), r = -1;
      tr.Wait(tr.StartExchange(&s, &r, sizeof s));
      EXPECT_EQ(r, (tr.rank() + 2) % 3);
    }, o);
    for (auto& e : late) EXPECT_FALSE(e) << timeout_s << " s: " << ExceptionMessage(e);
    auto failing = RunInProcess(3, [](Transport& tr) {
      if (tr.rank() == 1) throw InvalidArgument("injected failure");
      int s = 1, r = 0;
      tr.Wait(tr.StartExchange(&s, &r, sizeof s));
    }, o);
    ASSERT_TRUE(failing[2]);
    EXPECT_NE(ExceptionMessage(failing[2]).find("rank 1 failed: injected failure"),
              std::string::npos)
        << ExceptionMessage(failing[2]);
  }
}

TEST(InProcess, MismatchedMessageSizesAreAnError) {
  InProcessOptions o;
  o.timeout_s = 5;
  auto errors = RunInProcess(2, [](Transport& tr) {
    double s[2] = {1, 2}, r[2];
    tr.Wait(tr.StartExchange(s, r, tr.rank() == 0 ? 8 : 16));
  }, o);
  // Whichever rank checks first names both sizes (the other may fail on its abort instead).
  bool named = false;
  for (auto& e : errors) {
    const std::string what = e ? ExceptionMessage(e) : "";
    named = named ||
            what.find("rank 1: exchange 0 expected 16 bytes from rank 0, got 8 (ranks run "
                      "different schedules)") != std::string::npos ||
            what.find("rank 0: exchange 0 expected 8 bytes from rank 1, got 16 (ranks run "
                      "different schedules)") != std::string::npos;
  }
  EXPECT_TRUE(named) << (errors[0] ? ExceptionMessage(errors[0]) : "rank 0 succeeded") << " / "
                     << (errors[1] ? ExceptionMessage(errors[1]) : "rank 1 succeeded");
}

TEST(InProcess, BadArguments) {
  EXPECT_THROW(InProcessWorld(0), InvalidArgument);
  InProcessOptions o;
  o.timeout_s = 0;
  EXPECT_THROW(InProcessWorld(2, o), InvalidArgument);
  InProcessWorld w(2);
  EXPECT_THROW(w.MakeTransport(2), InvalidArgument);
  auto t = w.MakeTransport(0);
  EXPECT_THROW(t->Wait(0), InvalidArgument);
  // A second transport of rank 0 would take rank 0's messages off the same link.
  try {
    w.MakeTransport(0);
    ADD_FAILURE() << "a second transport of rank 0 was made";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 already has a transport"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(w.MakeTransport(1));
}

}  // namespace
}  // namespace cerar
