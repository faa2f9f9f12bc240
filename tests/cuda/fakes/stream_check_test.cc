// A device back end and a device transport must enqueue on one stream: on two, nothing orders the
// step kernels against the exchanges (a send could read a slot before it is written) and a run
// returns garbage without an error. The engines refuse that locally, before any collective.
#include <gtest/gtest.h>

#include <string>

#include "cerar/runtime/allreduce.h"
#include "host_backends.h"
#include "test_designs.h"

namespace cerar {
namespace {

using StreamTransport = test::DeviceTransport;

const void* const kStreamA = reinterpret_cast<const void*>(0xa000);
const void* const kStreamB = reinterpret_cast<const void*>(0xb000);

void ExpectStreamsRefused(const std::string& text) {
  EXPECT_NE(text.find("stream 0xa000"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 0xb000"), std::string::npos) << text;
  EXPECT_NE(text.find("must enqueue on the same stream"), std::string::npos) << text;
}

TEST(StreamCheck, EnginesRefuseADeviceBackEndAndTransportOnDifferentStreams) {
  test::WrappedCpuBackend be;
  be.space = MemorySpace::kDevice;
  be.stream = kStreamA;
  StreamTransport ring_tr(kStreamB, 1);
  try {
    RingAllReduce(ring_tr, be, 10, AllReduceOptions{});
    FAIL() << "ring: no throw";
  } catch (const InvalidArgument& e) {
    ExpectStreamsRefused(e.what());
  }
  EXPECT_EQ(ring_tr.checks, 0);
  StreamTransport coded_tr(kStreamB, 2);
  try {
    CodedAllReduce(test::RandomDesign(2, 2, 1), coded_tr, be, 10, AllReduceOptions{});
    FAIL() << "coded: no throw";
  } catch (const InvalidArgument& e) {
    ExpectStreamsRefused(e.what());
  }
  EXPECT_EQ(coded_tr.checks, 0);
}

// The legacy stream is a stream too: a back end on it (CreateCudaBackend's default) and a
// transport on a stream of its own are refused as well.
TEST(StreamCheck, TheLegacyStreamIsNotTheTransportsStream) {
  test::WrappedCpuBackend be;
  be.space = MemorySpace::kDevice;
  StreamTransport tr(kStreamB, 1);
  try {
    RingAllReduce(tr, be, 10, AllReduceOptions{});
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("stream 0 (the legacy stream)"), std::string::npos)
        << e.what();
  }
}

TEST(StreamCheck, OneSharedStreamIsAccepted) {
  test::WrappedCpuBackend be;
  be.space = MemorySpace::kDevice;
  be.stream = kStreamA;
  StreamTransport tr(kStreamA, 1);
  EXPECT_NO_THROW(RingAllReduce(tr, be, 10, AllReduceOptions{}));
  EXPECT_GT(tr.checks, 0);
}

}  // namespace
}  // namespace cerar
