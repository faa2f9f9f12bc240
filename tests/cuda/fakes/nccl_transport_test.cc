// NcclTransport's failure handling against fake NCCL/CUDA entry points (fake_device.h): a stuck
// exchange or an asynchronous NCCL error ends in TransportError within the timeout, with the
// communicator aborted; the transport then refuses every call, as the MPI transport does; a
// nonblocking communicator's ncclInProgress is not a failure.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/cuda/nccl_transport.h"
#include "fake_device.h"
#include "fake_nccl_test.h"
#include "nccl_transport_impl.h"

namespace cerar {
namespace {

ncclComm_t FakeComm() { return reinterpret_cast<ncclComm_t>(0x100); }
cudaStream_t FakeStream() { return reinterpret_cast<cudaStream_t>(0x200); }

using test::ExpectContains;
using test::MessageOf;
using test::Quick;

// Every call after a failure throws, naming the first failure.
void ExpectUnusable(Transport& t, const std::string& first_failure) {
  char buf[8];
  const std::string prefix = "NCCL transport of rank 1: unusable after an earlier failure: ";
  for (const std::string& text :
       {MessageOf([&] { t.StartExchange(buf, buf, sizeof buf); }), MessageOf([&] { t.Wait(1); }),
        MessageOf([&] { t.Finish(); }), MessageOf([&] { t.CheckAgreement("x", 1); })}) {
    ExpectContains(text, prefix);
    ExpectContains(text, first_failure);
  }
}

using NcclTransportFake = test::FakeRankOneOfFour;

TEST_F(NcclTransportFake, AStuckExchangeTimesOutAbortsTheCommunicatorAndFailsTheTransport) {
  auto t = std::make_unique<cuda::NcclTransport>(FakeComm(), FakeStream(), /*owns_comm=*/true,
                                                 Quick());
  char buf[64];
  fake::State().event_query = cudaErrorNotReady;  // the peer never sends
  const Transport::Handle h = t->StartExchange(buf, buf, sizeof buf);
  t->Wait(h);  // stream-ordered: returns at once
  EXPECT_TRUE(t->MayStillWrite());
  const std::string text = test::MessageAfterTheTimeout([&] { t->Finish(); });
  ExpectContains(text, "rank 1: exchange 1 (send to rank 2, receive from rank 0) did not "
                       "complete within 0.2 s");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_FALSE(t->MayStillWrite());  // the engines may free their buffers
  ExpectUnusable(*t, "did not complete within 0.2 s");
  fake::State().calls.clear();
  t.reset();  // owned communicator: already aborted, so neither synchronised nor destroyed
  EXPECT_EQ(fake::State().Count("StreamSynchronize"), 0);
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);
  EXPECT_EQ(fake::State().Count("CommAbort"), 0);
}

TEST_F(NcclTransportFake, AnAsynchronousErrorFailsTheWaitAtOnce) {
  auto t = CreateNcclTransport(FakeComm(), FakeStream(), NcclTransportOptions{});
  char buf[64];
  t->StartExchange(buf, buf, sizeof buf);
  fake::State().event_query = cudaErrorNotReady;
  fake::State().async_error = ncclRemoteError;  // the peer died
  const auto start = std::chrono::steady_clock::now();
  const std::string text = MessageOf([&] { t->Finish(); });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  ExpectContains(text, "rank 1: asynchronous NCCL error 6");
  ExpectContains(text, "fake NCCL detail");
  ExpectContains(text, "exchange 1 (send to rank 2, receive from rank 0)");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  ExpectUnusable(*t, "asynchronous NCCL error 6");
  fake::State().calls.clear();
  t.reset();  // borrowed: aborted already, nothing more
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);
  EXPECT_EQ(fake::State().Count("StreamSynchronize"), 0);
}

TEST_F(NcclTransportFake, AFailedGroupIsATransportErrorAndFailsTheTransport) {
  auto t = CreateNcclTransport(FakeComm(), FakeStream(), Quick());
  char buf[64];
  fake::State().group_end = ncclRemoteError;
  const std::string text = MessageOf([&] { t->StartExchange(buf, buf, sizeof buf); });
  ExpectContains(text, "ncclGroupEnd() failed");
  ExpectContains(text, "rank 1");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  fake::State().group_end = ncclSuccess;
  ExpectUnusable(*t, "ncclGroupEnd() failed");  // the next run no longer pairs with this one
}

TEST_F(NcclTransportFake, AStuckAgreementCheckTimesOut) {
  auto t = CreateNcclTransport(FakeComm(), FakeStream(), Quick());
  t->CheckAgreement("element count", 10);  // completes
  fake::State().event_query = cudaErrorNotReady;
  const std::string text = MessageOf([&] { t->CheckAgreement("element count", 10); });
  ExpectContains(text, "rank 1: the check of element count did not complete within 0.2 s");
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(fake::State().Count("StreamSynchronize"), 0);  // it polled instead
}

// A nonblocking communicator answers ncclInProgress while the group is being enqueued.
TEST_F(NcclTransportFake, InProgressIsNotAFailure) {
  auto t = CreateNcclTransport(FakeComm(), FakeStream(), Quick());
  char buf[64];
  fake::State().group_end = ncclInProgress;
  fake::State().async_in_progress = 3;
  Transport::Handle h = 0;
  EXPECT_NO_THROW(h = t->StartExchange(buf, buf, sizeof buf));
  EXPECT_EQ(h, 1u);
  EXPECT_EQ(fake::State().async_in_progress, 0);  // waited until NCCL had enqueued it
  EXPECT_NO_THROW(t->Wait(h));
  EXPECT_NO_THROW(t->Finish());
  EXPECT_EQ(fake::State().Count("CommAbort"), 0);
}

TEST_F(NcclTransportFake, AHealthyRunWaitsForEveryExchangeAndTheDestructorFreesTheComm) {
  auto t = std::make_unique<cuda::NcclTransport>(FakeComm(), FakeStream(), /*owns_comm=*/true,
                                                 Quick());
  char buf[64];
  for (int i = 0; i < 3; ++i) t->Wait(t->StartExchange(buf, buf, sizeof buf));
  EXPECT_EQ(t->StartExchange(buf, buf, 0), 4u);  // nothing to send: no group, no event
  t->Finish();
  EXPECT_EQ(fake::State().Count("GroupEnd"), 3);
  EXPECT_EQ(fake::State().Count("EventRecord"), 3);
  EXPECT_GE(fake::State().Count("EventQuery"), 3);
  EXPECT_EQ(t->bytes_sent(), 192u);
  t.reset();
  EXPECT_EQ(fake::State().Count("CommDestroy"), 1);
  EXPECT_EQ(fake::State().Count("CommAbort"), 0);
}

// The destructor waits for the exchanges still enqueued (they use the communicator it destroys),
// but with the deadline: it used to synchronise the stream, forever when a peer was gone.
TEST_F(NcclTransportFake, TheDestructorDoesNotWaitForeverForAStuckExchange) {
  auto t = std::make_unique<cuda::NcclTransport>(FakeComm(), FakeStream(), /*owns_comm=*/true,
                                                 Quick());
  char buf[64];
  fake::State().event_query = cudaErrorNotReady;
  t->StartExchange(buf, buf, sizeof buf);
  const auto start = std::chrono::steady_clock::now();
  t.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_EQ(fake::State().Count("CommAbort"), 1);
  EXPECT_EQ(fake::State().Count("CommDestroy"), 0);  // aborting freed it
  EXPECT_EQ(fake::State().Count("StreamSynchronize"), 0);
}

TEST_F(NcclTransportFake, AFailedQueryOfTheCommunicatorIsATransportError) {
  fake::State().user_rank = ncclInvalidUsage;
  const std::string text = MessageOf([] { CreateNcclTransport(FakeComm(), FakeStream()); });
  ExpectContains(text, "NCCL transport: NCCL call ncclCommUserRank(comm, &rank) failed");
  ExpectContains(text, "fake NCCL detail");
  EXPECT_EQ(fake::State().Count("CommAbort"), 0);  // nothing enqueued: nothing to stop
}

TEST_F(NcclTransportFake, TheTimeoutIsChecked) {
  for (double bad : {0.0, -1.0, std::nan("")}) {
    NcclTransportOptions o;
    o.timeout_s = bad;
    try {
      CreateNcclTransport(FakeComm(), FakeStream(), o);
      FAIL() << "no throw for " << bad;
    } catch (const InvalidArgument& e) {
      ExpectContains(e.what(), "NCCL transport: timeout");
      ExpectContains(e.what(), "expected > 0");
    }
  }
  EXPECT_EQ(NcclTransportOptions{}.timeout_s, 60.0);  // as MpiTransportOptions
}

}  // namespace
}  // namespace cerar
