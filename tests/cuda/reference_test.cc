// Checks the host reference the GPU engine tests rely on (protocol_reference.h) against the CPU
// back end's engine run on the in-process transport, so a GPU failure points at the GPU code and
// not at the reference or its rounding bound. Runs without a device.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "gpu_test_util.h"
#include "protocol_reference.h"

namespace cerar {
namespace {

struct RefCase {
  int N, c;
  std::size_t n;
  DType dtype;
  Accumulation accumulation = Accumulation::kBuffer;  // the GPU engine test runs each
};
void PrintTo(const RefCase& k, std::ostream* os) {
  *os << "N=" << k.N << " c=" << k.c << " n=" << k.n << " " << test::Name(k.dtype) << " "
      << ToString(k.accumulation);
}

class ProtocolReferenceTest : public testing::TestWithParam<RefCase> {};

TEST_P(ProtocolReferenceTest, CpuEngineIsWithinTheBound) {
  const auto [N, c, n, t, accumulation] = GetParam();
  const Design design = test::RandomDesign(N, c, std::uint64_t(N * 31 + c) + n);
  std::mt19937_64 rng(std::uint64_t(N * 31 + c) + n + 1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<double>> inputs(static_cast<std::size_t>(N), std::vector<double>(n));
  for (auto& g : inputs)
    for (auto& x : g) x = test::RoundTo(t, u(rng));
  std::vector<std::vector<double>> outputs(static_cast<std::size_t>(N));
  AllReduceOptions options;
  options.dtype = t;
  options.segment_bytes = 512;
  options.accumulation = accumulation;
  const auto errors = RunInProcess(N, [&](Transport& transport) {
    auto backend = CreateCpuBackend();
    CodedAllReduce allreduce(design, transport, *backend, n, options);
    const int r = transport.rank();
    auto bytes = test::Pack(t, inputs[std::size_t(r)]);
    allreduce.Run(bytes.data());
    outputs[std::size_t(r)] = test::Unpack(t, bytes);
  });
  for (const auto& e : errors) ASSERT_FALSE(e) << ExceptionMessage(e);
  double worst = 0;  // largest error as a fraction of its bound, reported for calibration
  for (int j = 0; j < N; ++j) {
    const auto want = test::ProtocolReference(design, inputs, j, 1.0, test::StoreRoundoff(t),
                                            test::StoreUnderflow(t));
    for (std::size_t i = 0; i < n; ++i) {
      const double err = std::abs(outputs[std::size_t(j)][i] - want.value[i]);
      ASSERT_LE(err, want.bound[i]) << "rank " << j << " element " << i;
      if (want.bound[i] > 0) worst = std::max(worst, err / want.bound[i]);
    }
  }
  RecordProperty("worst_error_over_bound", std::to_string(worst));
}

std::vector<RefCase> RefCases() {
  std::vector<RefCase> out;
  const std::pair<int, int> shapes[] = {{2, 1}, {2, 3}, {3, 2}, {4, 3}, {3, 5}, {4, 8}};
  for (auto [N, c] : shapes)
    for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(1001)})
      for (DType t : {DType::kFloat32, DType::kFloat64}) out.push_back({N, c, n, t});
  for (auto [N, c] : {std::pair{2, 3}, std::pair{2, 5}, std::pair{3, 7}, std::pair{4, 8}})
    for (Accumulation a : {Accumulation::kFloat64, Accumulation::kFloat64Feedback,
                           Accumulation::kFloat64State})
      out.push_back({N, c, 1001, DType::kFloat32, a});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ProtocolReferenceTest, testing::ValuesIn(RefCases()),
                         [](const testing::TestParamInfo<RefCase>& info) {
                           std::ostringstream s;
                           s << "N" << info.param.N << "_c" << info.param.c << "_n" << info.param.n
                             << "_" << test::Name(info.param.dtype);
                           if (info.param.accumulation != Accumulation::kBuffer)
                             s << "_" << (info.param.accumulation == Accumulation::kFloat64
                                              ? "acc64"
                                              : info.param.accumulation ==
                                                        Accumulation::kFloat64Feedback
                                                    ? "feedback"
                                                    : "state64");
                           return s.str();
                         });

}  // namespace
}  // namespace cerar
