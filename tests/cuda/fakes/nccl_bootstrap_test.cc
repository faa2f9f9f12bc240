// The NCCL bootstrap's communicator creation (nccl_bootstrap.h) against the fake NCCL
// (fake_device.h): a blocking ncclCommInitRank waited in NCCL's bootstrap forever for a peer that
// failed before joining (F7). Now the communicator is created nonblocking, its initialisation
// polled against the transport's timeout, aborted on the deadline or an error, and the ranks
// agree on the outcome before any of them uses it.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "cerar/errors.h"
#include "fake_device.h"
#include "fake_nccl_test.h"
#include "nccl_bootstrap.h"

namespace cerar {
namespace {

using test::ExpectContains;
using test::MessageOf;
using test::Quick;

// The agreement of a run where the other ranks report `peer_failed` (-1: none failed).
struct Agreement {
  int peer_failed = -1;
  int calls = 0;
  bool mine_failed = false;
  cuda::AgreeOnFailure fn() {
    return [this](bool failed) {
      ++calls;
      mine_failed = failed;
      return failed ? 1 : peer_failed;  // this is rank 1 below
    };
  }
};

// Rank 1 of 4 bootstraps; `out` (if any) receives the transport.
std::function<void()> Start(Agreement& agreement, std::unique_ptr<Transport>* out = nullptr) {
  return [&agreement, out] {
    auto t = cuda::BootstrapNcclTransport(1, 4, ncclUniqueId{}, nullptr, Quick(), agreement.fn());
    if (out) *out = std::move(t);
  };
}

std::string Bootstrap(Agreement& agreement, std::unique_ptr<Transport>* out = nullptr) {
  return MessageOf(Start(agreement, out));
}

using NcclBootstrapFake = test::FakeRankOneOfFour;

TEST_F(NcclBootstrapFake, AnInitialisationThatNeverCompletesTimesOutAndIsAborted) {
  fake::State().async_in_progress = 1 << 30;  // a peer never joins
  Agreement agreement;
  const std::string text = test::MessageAfterTheTimeout(Start(agreement));
  ExpectContains(text, "NCCL bootstrap on rank 1 of 4: ncclCommInitRankConfig did not complete "
                       "within 0.2 s");
  ExpectContains(text, "the communicator is aborted");
  EXPECT_EQ(fake::State().init_blocking, 0);  // nonblocking, so that the deadline is ours
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);
  EXPECT_EQ(agreement.calls, 1);  // the peers are told, too
  EXPECT_TRUE(agreement.mine_failed);
}

TEST_F(NcclBootstrapFake, AnInitialisationErrorIsReportedAndAborted) {
  fake::State().async_in_progress = 3;
  fake::State().async_error = ncclRemoteError;
  Agreement agreement;
  const std::string text = Bootstrap(agreement);
  ExpectContains(text, "NCCL bootstrap on rank 1 of 4: ncclCommInitRankConfig failed: "
                       "asynchronous NCCL error 6 (fake nccl status 6): fake NCCL detail");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(agreement.calls, 1);
  EXPECT_TRUE(agreement.mine_failed);
}

TEST_F(NcclBootstrapFake, AFailedCallIsReportedWithItsStatus) {
  fake::State().init_result = ncclInvalidArgument;
  Agreement agreement;
  const std::string text = Bootstrap(agreement);
  ExpectContains(text, "NCCL bootstrap on rank 1 of 4: NCCL call ncclCommInitRankConfig(&comm, "
                       "size, id, rank, &config) failed at nccl_bootstrap.cc:");
  ExpectContains(text, "error 4 (fake nccl status 4)");
  EXPECT_EQ(fake::State().Count("CommGetAsyncError"), 0);
  EXPECT_EQ(agreement.calls, 1);
}

TEST_F(NcclBootstrapFake, ACompletedInitialisationGivesATransportThatOwnsTheCommunicator) {
  fake::State().async_in_progress = 5;  // in progress for a while, then ready
  Agreement agreement;
  std::unique_ptr<Transport> t;
  EXPECT_EQ(Bootstrap(agreement, &t), "no throw");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rank(), 1);
  EXPECT_EQ(agreement.calls, 1);
  EXPECT_FALSE(agreement.mine_failed);
  EXPECT_EQ(fake::State().Count("CommAbort"), 0);
  t.reset();
  EXPECT_EQ(fake::State().Count("CommDestroy"), 1);  // owned
}

// A nonblocking communicator's teardown may answer ncclInProgress (it goes on inside NCCL): not a
// failure to print; an error still is.
TEST_F(NcclBootstrapFake, ATeardownInProgressIsNotReportedAnErrorIs) {
  for (const ncclResult_t teardown : {ncclInProgress, ncclInternalError}) {
    fake::Reset();
    fake::State().rank = 1;
    fake::State().size = 4;
    fake::State().teardown = teardown;
    Agreement agreement;
    std::unique_ptr<Transport> t;
    ASSERT_EQ(Bootstrap(agreement, &t), "no throw");
    ::testing::internal::CaptureStderr();
    t.reset();
    agreement.peer_failed = 2;
    Bootstrap(agreement);  // aborts its communicator
    const std::string printed = ::testing::internal::GetCapturedStderr();
    if (teardown == ncclInProgress) {
      EXPECT_EQ(printed, "");
    } else {
      ExpectContains(printed, "cerar: ignored in cleanup: NCCL call ncclCommDestroy(comm_)");
      ExpectContains(printed, "cerar: ignored in cleanup: NCCL call ncclCommAbort(comm)");
    }
  }
}

// This rank's communicator is ready but a peer's is not: it must not be used (its first exchange
// would wait out the timeout) and is aborted, not destroyed.
TEST_F(NcclBootstrapFake, APeersFailureFailsEveryRank) {
  Agreement agreement;
  agreement.peer_failed = 2;
  const std::string text = Bootstrap(agreement);
  ExpectContains(text, "NCCL bootstrap on rank 1 of 4: rank 2 could not create its NCCL "
                       "communicator or transport");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);
  EXPECT_EQ(fake::State().Count("Free"), 1);  // the transport's check buffer is freed
}

// The transport's construction fails after the communicator is ready: aborted, agreed.
TEST_F(NcclBootstrapFake, ATransportThatCannotBeBuiltAbortsTheCommunicator) {
  fake::State().user_rank = ncclInternalError;
  Agreement agreement;
  const std::string text = Bootstrap(agreement);
  ExpectContains(text, "ncclCommUserRank");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(agreement.calls, 1);
  EXPECT_TRUE(agreement.mine_failed);
}

// The agreement itself failing (MPI_Allreduce): the communicator is not kept either.
TEST_F(NcclBootstrapFake, AFailedAgreementAbortsTheCommunicator) {
  const cuda::AgreeOnFailure broken = [](bool) -> int {
    throw TransportError("NCCL bootstrap: MPI_Allreduce(failed rank) failed: fake");
  };
  try {
    cuda::BootstrapNcclTransport(1, 4, ncclUniqueId{}, nullptr, Quick(), broken);
    FAIL() << "no throw";
  } catch (const TransportError& e) {
    ExpectContains(e.what(), "MPI_Allreduce(failed rank) failed");
  }
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);
}

TEST_F(NcclBootstrapFake, ATimeoutThatIsNotPositiveIsRefusedOnEveryRank) {
  NcclTransportOptions o;
  o.timeout_s = 0;
  Agreement agreement;
  EXPECT_THROW(cuda::BootstrapNcclTransport(1, 4, ncclUniqueId{}, nullptr, o, agreement.fn()),
               InvalidArgument);
  EXPECT_EQ(fake::State().Count("CommInitRankConfig"), 0);
  EXPECT_EQ(agreement.calls, 1);  // the others learn of it rather than wait
}

}  // namespace
}  // namespace cerar
