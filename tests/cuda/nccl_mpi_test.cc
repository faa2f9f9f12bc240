// Multi-rank NCCL transport under mpiexec, one rank per GPU, communicator bootstrapped from MPI.
// Every rank takes the same skip decision (agreed over MPI) so no rank waits on a skipped one,
// and the same decision to stop after a failed case (AllRanksOk); an exception on one rank ends
// the job (MPI_Abort), instead of the other ranks waiting in the next collective until a timeout.
//   mpiexec -n <GPUs> cerar_cuda_mpi_tests
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "cerar/runtime/cuda/nccl_mpi.h"
#include "gpu_test_util.h"
#include "protocol_reference.h"

namespace cerar {
namespace {

int Rank() { int r = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
int Size() { int s = 0; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }

// Empty when every rank can run with its own GPU, else the reason (same on every rank).
std::string SkipReason() {
  const auto avail = cuda::QueryDevices();
  int ok = (Size() >= 2 && avail.count >= Size()) ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok) return "";
  return "needs >= 2 ranks and one GPU per rank: " + std::to_string(Size()) + " ranks, " +
         std::to_string(avail.count) + " GPUs" + (avail.reason.empty() ? "" : " (" + avail.reason + ")");
}

// Collective: whether every rank's `ok` holds, so that all ranks stop a loop of cases together.
bool AllRanksOk(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// Runs a case; an exception (one rank's TransportError, DeviceError) ends the whole job: the
// other ranks are inside a collective the failed rank will not join.
template <typename F>
void OrAbort(F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", Rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

class NcclMpi : public testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = SkipReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    CERAR_CUDA_CHECK(cudaSetDevice(Rank()));
    CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    OrAbort([&] { transport_ = CreateNcclTransportFromMpi(MPI_COMM_WORLD, stream_); });
  }
  void TearDown() override {
    transport_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Transport> transport_;
};

unsigned char Pattern(int rank, int round, std::size_t b) {
  return static_cast<unsigned char>(rank * 53 + round * 7 + b * 13);
}

TEST_F(NcclMpi, EachRankReceivesFromItsPredecessor) {
  const int rank = Rank(), size = Size(), prev = (rank + size - 1) % size;
  EXPECT_EQ(transport_->rank(), rank);
  EXPECT_EQ(transport_->size(), size);
  const std::size_t bytes = (std::size_t(1) << 20) + 7;
  const int rounds = 5;
  std::vector<unsigned char*> send(rounds), recv(rounds);
  for (int t = 0; t < rounds; ++t) {
    std::vector<unsigned char> host(bytes);
    for (std::size_t b = 0; b < bytes; ++b) host[b] = Pattern(rank, t, b);
    CERAR_CUDA_CHECK(cudaMalloc(&send[t], bytes));
    CERAR_CUDA_CHECK(cudaMalloc(&recv[t], bytes));
    CERAR_CUDA_CHECK(cudaMemcpy(send[t], host.data(), bytes, cudaMemcpyHostToDevice));
  }
  CERAR_CUDA_CHECK(cudaDeviceSynchronize());  // legacy-stream copies land before the exchanges
  OrAbort([&] {
    for (int t = 0; t < rounds; ++t)
      transport_->Wait(transport_->StartExchange(send[t], recv[t], bytes));
    transport_->Finish();
  });
  EXPECT_EQ(transport_->bytes_sent(), std::uint64_t(rounds) * bytes);
  CERAR_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int t = 0; t < rounds; ++t) {
    std::vector<unsigned char> back(bytes);
    CERAR_CUDA_CHECK(cudaMemcpy(back.data(), recv[t], bytes, cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (std::size_t b = 0; b < bytes; ++b)
      if (back[b] != Pattern(prev, t, b) && bad++ == 0)
        ADD_FAILURE() << "rank " << rank << " round " << t << " byte " << b;
    EXPECT_EQ(bad, 0u) << "rank " << rank << " round " << t;
    cudaFree(send[t]);
    cudaFree(recv[t]);
  }
}

TEST_F(NcclMpi, CheckAgreementThrowsOnEveryRankWhenValuesDiffer) {
  OrAbort([&] { transport_->CheckAgreement("count", 1000); });
  const int rank = Rank();
  try {
    transport_->CheckAgreement("count", rank == 1 ? 7 : 5);
    FAIL() << "rank " << rank << ": no TransportError";
  } catch (const TransportError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ranks disagree on count"), std::string::npos) << msg;
    EXPECT_NE(msg.find(rank == 1 ? "has 5" : "has 7"), std::string::npos) << msg;
  }
}

// The protocol engine over NCCL with the CUDA back end, one rank per GPU, against the host
// reference (every rank computes the same random design and all ranks' inputs from one seed).
TEST_F(NcclMpi, CodedAllReduceMatchesHostReference) {
  const int N = Size(), rank = Rank();
  for (int c : {1, 3, N + 1}) {
    for (DType t : {DType::kFloat32, DType::kFloat64}) {
      std::size_t bad = 0;
      const Design design = test::RandomDesign(N, c, std::uint64_t(N * 1000 + c));
      std::mt19937_64 rng(std::uint64_t(N * 1000 + c) + 1);
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      const std::size_t n = 100003;
      std::vector<std::vector<double>> inputs(static_cast<std::size_t>(N), std::vector<double>(n));
      for (auto& g : inputs)
        for (auto& x : g) x = test::RoundTo(t, u(rng));
      OrAbort([&] {
        auto backend = CreateCudaBackend(stream_);
        AllReduceOptions options;
        options.dtype = t;
        options.segment_bytes = 64 * 1024;
        CodedAllReduce allreduce(design, *transport_, *backend, n, options);
        test::DeviceArray buffer(t, n);
        buffer.Upload(inputs[std::size_t(rank)]);
        transport_->ResetCounters();
        allreduce.Run(buffer.get());
        EXPECT_EQ(transport_->bytes_sent(), allreduce.expected_bytes_per_run());
        const auto got = buffer.Download();
        const auto want = test::ProtocolReference(design, inputs, rank, 1.0,
                                                  test::StoreRoundoff(t), test::StoreUnderflow(t));
        for (std::size_t i = 0; i < n; ++i)
          if (!(std::abs(got[i] - want.value[i]) <= want.bound[i]) && bad++ == 0)
            ADD_FAILURE() << "rank " << rank << " c " << c << " " << test::Name(t)
                          << " element " << i << ": " << got[i] << " vs " << want.value[i];
      });
      EXPECT_EQ(bad, 0u) << "rank " << rank << " c " << c << " " << test::Name(t);
      // Every rank stops after the first failed case, together (a lone rank leaving the loop
      // left the others in the next engine's collective checks).
      if (!AllRanksOk(bad == 0)) return;
    }
  }
}

}  // namespace
}  // namespace cerar

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
