// NCCL transport on a one-rank communicator the test owns (borrowed by the transport): the ring
// exchange sends to itself, so every byte must come back. Skipped without a device.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cerar/runtime/cuda/nccl_transport.h"
#include "gpu_test_util.h"

namespace cerar {
namespace {

class NcclOneRank : public testing::Test {
 protected:
  void SetUp() override {
    CERAR_REQUIRE_GPU();
    int device = 0;
    CERAR_CUDA_CHECK(cudaSetDevice(device));
    CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CERAR_NCCL_CHECK(ncclCommInitAll(&comm_, 1, &device));
  }
  void TearDown() override {
    if (comm_) ncclCommDestroy(comm_);  // ours, not the transport's
    if (stream_) cudaStreamDestroy(stream_);
  }
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

TEST_F(NcclOneRank, RoundTripReturnsEveryByteAndCountsThem) {
  auto transport = CreateNcclTransport(comm_, stream_);
  EXPECT_EQ(transport->rank(), 0);
  EXPECT_EQ(transport->size(), 1);
  EXPECT_EQ(transport->memory_space(), MemorySpace::kDevice);
  // Several exchanges back to back, stream-ordered, of awkward sizes.
  const std::vector<std::size_t> sizes = {1, 7, 4096, (std::size_t(1) << 22) + 3};
  std::vector<unsigned char*> send(sizes.size()), recv(sizes.size());
  std::vector<Transport::Handle> handles;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<unsigned char> host(sizes[i]);
    for (std::size_t b = 0; b < host.size(); ++b) host[b] = static_cast<unsigned char>(b * 31 + i);
    CERAR_CUDA_CHECK(cudaMalloc(&send[i], sizes[i]));
    CERAR_CUDA_CHECK(cudaMalloc(&recv[i], sizes[i]));
    CERAR_CUDA_CHECK(cudaMemcpy(send[i], host.data(), host.size(), cudaMemcpyHostToDevice));
    CERAR_CUDA_CHECK(cudaMemset(recv[i], 0, sizes[i]));
    // The legacy-stream copies above must land before the non-blocking stream reads them.
    CERAR_CUDA_CHECK(cudaDeviceSynchronize());
    handles.push_back(transport->StartExchange(send[i], recv[i], sizes[i]));
    total += sizes[i];
  }
  for (auto h : handles) transport->Wait(h);
  EXPECT_EQ(transport->bytes_sent(), total);
  CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<unsigned char> back(sizes[i]);
    CERAR_CUDA_CHECK(cudaMemcpy(back.data(), recv[i], sizes[i], cudaMemcpyDeviceToHost));
    for (std::size_t b = 0; b < back.size(); ++b)
      ASSERT_EQ(back[b], static_cast<unsigned char>(b * 31 + i)) << "exchange " << i << " byte " << b;
    cudaFree(send[i]);
    cudaFree(recv[i]);
  }
  transport->ResetCounters();
  EXPECT_EQ(transport->bytes_sent(), 0u);
}

TEST_F(NcclOneRank, WaitRejectsHandlesNeverIssued) {
  auto transport = CreateNcclTransport(comm_, stream_);
  EXPECT_THROW(transport->Wait(1), InvalidArgument);
  const auto h = transport->StartExchange(nullptr, nullptr, 0);  // empty exchange is legal
  EXPECT_NO_THROW(transport->Wait(h));
  EXPECT_THROW(transport->Wait(h + 1), InvalidArgument);
  EXPECT_THROW(transport->StartExchange(nullptr, nullptr, 8), InvalidArgument);
}

TEST_F(NcclOneRank, CheckAgreementPassesOnOneRank) {
  auto transport = CreateNcclTransport(comm_, stream_);
  EXPECT_NO_THROW(transport->CheckAgreement("count", 12345));
  EXPECT_NO_THROW(transport->CheckAgreement("design hash", ~std::uint64_t(0)));
}

TEST(NcclTransport, NullCommunicatorIsRejected) {
  EXPECT_THROW(CreateNcclTransport(nullptr, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace cerar
