// The protocol engine (CodedAllReduce) end to end with the CUDA back end: N ranks on one GPU over
// the test's stream-ordered device ring, results against the independent host computation of
// protocol_reference.h, and for float32 under each accumulation also against the CPU back end's
// run of the same accumulation. Skipped without a device.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/cuda/cuda_backend.h"
#include "cerar/runtime/inprocess.h"
#include "device_ring.h"
#include "gpu_test_util.h"
#include "protocol_reference.h"

namespace cerar {
namespace {

struct EngineCase {
  int N, c;
  std::size_t n;
  DType dtype;
  ReduceOp op;
  Accumulation accumulation = Accumulation::kBuffer;
};
void PrintTo(const EngineCase& k, std::ostream* os) {
  *os << "N=" << k.N << " c=" << k.c << " n=" << k.n << " " << test::Name(k.dtype)
      << (k.op == ReduceOp::kAverage ? " average" : " sum") << " " << ToString(k.accumulation);
}

// The same run with the CPU back end on the in-process transport.
std::vector<std::vector<double>> CpuRun(const Design& design,
                                        const std::vector<std::vector<double>>& inputs,
                                        const AllReduceOptions& options) {
  const int N = design.N();
  std::vector<std::vector<double>> outputs(static_cast<std::size_t>(N));
  const auto errors = RunInProcess(N, [&](Transport& transport) {
    auto backend = CreateCpuBackend();
    CodedAllReduce allreduce(design, transport, *backend, inputs[0].size(), options);
    const int r = transport.rank();
    auto bytes = test::Pack(options.dtype, inputs[std::size_t(r)]);
    allreduce.Run(bytes.data());
    outputs[std::size_t(r)] = test::Unpack(options.dtype, bytes);
  });
  for (const auto& e : errors)
    if (e) ADD_FAILURE() << "CPU run: " << ExceptionMessage(e);
  return outputs;
}


class CudaEngineTest : public testing::TestWithParam<EngineCase> {};

TEST_P(CudaEngineTest, CodedAllReduceMatchesHostReference) {
  CERAR_REQUIRE_GPU();
  const auto [N, c, n, t, op, accumulation] = GetParam();
  const Design design = test::RandomDesign(N, c, std::uint64_t(N * 100 + c));
  std::mt19937_64 rng(n + std::uint64_t(N));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<double>> inputs(static_cast<std::size_t>(N), std::vector<double>(n));
  for (auto& g : inputs)
    for (auto& x : g) x = test::RoundTo(t, u(rng));
  std::vector<std::vector<double>> outputs(static_cast<std::size_t>(N));
  std::vector<std::uint64_t> sent(static_cast<std::size_t>(N));
  AllReduceOptions options;
  options.dtype = t;
  options.op = op;
  options.segment_bytes = 512;  // several pipelined segments even for small counts
  options.accumulation = accumulation;
  test::RunOnDeviceRing(N, [&](int rank, Transport& transport, cudaStream_t stream) {
    auto backend = CreateCudaBackend(stream);
    CodedAllReduce allreduce(design, transport, *backend, n, options);
    test::DeviceArray buffer(t, n);
    buffer.Upload(inputs[std::size_t(rank)]);
    allreduce.Run(buffer.get());
    outputs[std::size_t(rank)] = buffer.Download();
    sent[std::size_t(rank)] = transport.bytes_sent();
    EXPECT_EQ(transport.bytes_sent(), allreduce.expected_bytes_per_run());
  });
  const double scale = op == ReduceOp::kAverage ? 1.0 / N : 1.0;
  for (int j = 0; j < N; ++j) {
    const auto want = test::ProtocolReference(design, inputs, j, scale, test::StoreRoundoff(t),
                                            test::StoreUnderflow(t));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_LE(std::abs(outputs[std::size_t(j)][i] - want.value[i]), want.bound[i])
          << "rank " << j << " element " << i << ": " << outputs[std::size_t(j)][i]
          << ", host " << want.value[i];
    // Traffic (PROTOCOL.md §9): L vectors of m elements.
    const std::size_t m = (n + std::size_t(c) - 1) / std::size_t(c);
    EXPECT_EQ(sent[std::size_t(j)], std::uint64_t(design.L()) * m * test::ElementSize(t));
  }
  if (accumulation == Accumulation::kBuffer) return;
  // Both back ends round the same float64 values once; the sums' order differs (the CPU's GEMM
  // against the kernel's left-to-right loop), which moves a rounding only where a float64 value
  // lies within ~2^-50 of a float32 rounding boundary, so almost every element is identical. A
  // run that silently took the float32 path would differ in most elements.
  const auto cpu = CpuRun(design, inputs, options);
  std::size_t differ = 0;
  for (int j = 0; j < N; ++j)
    for (std::size_t i = 0; i < n; ++i)
      differ += outputs[std::size_t(j)][i] != cpu[std::size_t(j)][i];
  RecordProperty("elements_differing_from_cpu", std::to_string(differ));
  EXPECT_LE(double(differ), 0.01 * double(std::size_t(N) * n) + 1.0)
      << differ << " of " << N * n << " elements differ from the CPU back end's "
      << ToString(accumulation) << " run";
}

std::vector<EngineCase> EngineCases() {
  std::vector<EngineCase> out;
  const std::pair<int, int> shapes[] = {{2, 1}, {2, 3}, {3, 2}, {4, 3}, {3, 5}, {4, 8}};
  for (auto [N, c] : shapes)
    for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(1001), std::size_t(100003)})
      for (DType t : {DType::kFloat32, DType::kFloat64})
        out.push_back({N, c, n, t, n == 1001 ? ReduceOp::kAverage : ReduceOp::kSum});
  // The wide paths of float32 buffers; (2, 5) and (3, 7) have c > 2N, where the packets'
  // rounding is fed back (FeedsBackRounding) and the workspace has N feedback rows.
  const std::pair<int, int> wide_shapes[] = {{2, 3}, {2, 5}, {3, 7}, {4, 8}};
  for (auto [N, c] : wide_shapes)
    for (std::size_t n : {std::size_t(7), std::size_t(1001), std::size_t(100003)})
      for (Accumulation a : {Accumulation::kFloat64, Accumulation::kFloat64Feedback,
                             Accumulation::kFloat64State})
        out.push_back({N, c, n, DType::kFloat32,
                       n == 1001 ? ReduceOp::kAverage : ReduceOp::kSum, a});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaEngineTest, testing::ValuesIn(EngineCases()),
                         [](const testing::TestParamInfo<EngineCase>& info) {
                           std::ostringstream s;
                           s << "N" << info.param.N << "_c" << info.param.c << "_n" << info.param.n
                             << "_" << test::Name(info.param.dtype)
                             << (info.param.op == ReduceOp::kAverage ? "_avg" : "_sum");
                           switch (info.param.accumulation) {
                             case Accumulation::kBuffer: break;
                             case Accumulation::kFloat64: s << "_acc64"; break;
                             case Accumulation::kFloat64Feedback: s << "_feedback"; break;
                             case Accumulation::kFloat64State: s << "_state64"; break;
                           }
                           return s.str();
                         });

}  // namespace
}  // namespace cerar
