// Resource limits of the runtime (issue 14): size products that would wrap are refused before
// anything is allocated, simulate refuses what cannot fit, a thread that cannot start is an
// error instead of std::terminate, and a design whose sums overflow is reported as such.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "../common/address_space.h"
#include "cases.h"
#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "schedule.h"
#include "cerar/runtime/simulate.h"

namespace cerar {
namespace {

using ::testing::HasSubstr;
using test_common::ExitStatusUnderAddressLimit;
using test_common::kSanitized;

std::string MessageOf(const std::function<void()>& work) {
  try {
    work();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SimulateLimits, MemoryFigureIsTheSumOfItsParts) {
  // N = 4, c = 8, f32, count 10001: m = 1251 columns; one 1 MiB segment holds m·4 bytes.
  const Design d = test::RandomDesign(4, 8, 3);
  SimulateOptions o;
  o.count = 10001;
  const std::uint64_t vector = 10001 * 4, m = 1251;
  const std::uint64_t per_rank = 2 * vector + (10 + 2) * m * 4 + 2 * kDefaultSendSlots * m * 4;
  EXPECT_EQ(SimulateMemoryBytes(d, o), 4 * per_rank + 10001 * sizeof(long double));
  // With float64 state and feedback (c = 12 > 2N): N more rows, 8 bytes per row element; the
  // figure once ignored the accumulation and admitted runs 20 % larger than it said.
  const Design wide = test::RandomDesign(4, 12, 3);
  o.accumulation = Accumulation::kFloat64State;
  const std::uint64_t mw = 834;  // ceil(10001 / 12)
  const std::uint64_t wide_rank =
      2 * vector + (14 + 2 + 4) * mw * 8 + 2 * kDefaultSendSlots * mw * 4;
  EXPECT_EQ(SimulateMemoryBytes(wide, o), 4 * wide_rank + 10001 * sizeof(long double));
}

TEST(SimulateLimits, ImpossibleCountsAreRefusedBeforeAllocating) {
  // 2^62 elements of 4 bytes: count·sizeof(T) wrapped to 0 and Simulate wrote past the buffer.
  const Design d = test::RandomDesign(2, 2, 1);
  SimulateOptions o;
  o.count = std::size_t{1} << 62;
  EXPECT_FALSE(SimulateMemoryBytes(d, o).has_value());
  EXPECT_THAT(MessageOf([&] { Simulate(d, o); }),
              HasSubstr("simulate: count 4611686018427387904 (f32, N = 2, c = 2) needs more "
                        "than 2^64 bytes"));
  // Representable but far more than any machine: refused with the figure, naming the option.
  o.count = std::size_t{1} << 40;
  const auto need = SimulateMemoryBytes(d, o);
  ASSERT_TRUE(need.has_value());
  EXPECT_GT(*need, AvailableMemoryBytes());
  const std::string message = MessageOf([&] { CheckSimulateFits(d, o, "--count"); });
  EXPECT_THAT(message, HasSubstr("simulate: --count 1099511627776 (f32, N = 2, c = 2) needs "));
  EXPECT_THAT(message, HasSubstr(std::to_string(*need) + " bytes) for inputs, results, "
                                 "workspaces and exact sums; this process can use "));
}

TEST(SimulateLimits, MoreRanksThanThreadsCanServeAreRefused) {
  // Each in-process rank blocks in its waits, so it needs a thread of its own.
  const Design d = test::RandomDesign(kMaxSimulateRanks + 1, 1, 1);
  SimulateOptions o;
  o.count = 16;
  EXPECT_THAT(MessageOf([&] { Simulate(d, o); }),
              HasSubstr("N = 1025 ranks would need 1025 threads"));
}

TEST(SimulateLimits, OverflowingDesignIsAnErrorNotNaN) {
  // Entries of 1e308 are finite, so the design is valid, but its sums overflow: "measured -nan"
  // with exit 0 before.
  DesignParts parts = test::RandomDesign(3, 2, 5).parts();
  parts.encoders[1](0, 0) = 1e308;
  const Design d = Design::Create(parts, "huge entry");
  SimulateOptions o;
  o.count = 1000;
  o.dtype = DType::kFloat64;
  o.run_ring = false;
  EXPECT_THAT(MessageOf([&] { Simulate(d, o); }),
              HasSubstr("result is not finite: the design's matrices (largest |entry| 1e+308) "
                        "overflow f64 arithmetic"));
  // In float32 the engine refuses the design before running: the back end's float32 copy of
  // E[1] would hold inf.
  o.dtype = DType::kFloat32;
  EXPECT_THAT(MessageOf([&] { Simulate(d, o); }),
              HasSubstr("E[1] has an entry of magnitude 1e+308, beyond f32's largest finite "
                        "value 3.403e+38"));
}

TEST(SizeProducts, EngineRefusesCountsWhoseBytesWrap) {
  const Design d = test::RandomDesign(2, 2, 1);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 4;
  const auto errors = RunInProcess(2, [&](Transport& tr) {
    auto backend = CreateCpuBackend();
    AllReduceOptions o;
    o.dtype = DType::kFloat64;
    CodedAllReduce coded(d, tr, *backend, huge, o);
  });
  for (const auto& e : errors) {
    EXPECT_THAT(ExceptionMessage(e), HasSubstr("does not fit in 64 bits"));
  }
  const auto ring_errors = RunInProcess(2, [&](Transport& tr) {
    AllReduceOptions o;
    o.dtype = DType::kFloat64;
    RingAllReduce ring(tr, huge, o);
  });
  for (const auto& e : ring_errors) {
    EXPECT_THAT(ExceptionMessage(e), HasSubstr("does not fit in 64 bits"));
  }
}

// Counts whose bytes fit in 64 bits but not in memory: an InvalidArgument naming the count at
// once. The segment list of 2^61 float32 elements once grew for minutes towards terabytes
// before std::bad_alloc.
TEST(SizeProducts, CountsTooLargeForMemoryFailAtOnceByName) {
  if (kSanitized) GTEST_SKIP() << "AddressSanitizer aborts on allocations it cannot serve";
  const Design d = test::RandomDesign(3, 4, 1);
  struct Case {
    std::size_t count, segment_bytes;
    const char* words;
  };
  for (const Case& k : {Case{std::size_t{1} << 61, std::size_t{1} << 20, "segments of"},
                        Case{std::size_t{1} << 46, std::size_t{1} << 40, "bytes of workspace"}}) {
    const auto errors = RunInProcess(3, [&](Transport& tr) {
      auto backend = CreateCpuBackend();
      AllReduceOptions o;
      o.segment_bytes = k.segment_bytes;
      CodedAllReduce coded(d, tr, *backend, k.count, o);
    });
    for (const auto& e : errors) {
      EXPECT_THAT(ExceptionMessage(e),
                  HasSubstr("coded all-reduce: count " + std::to_string(k.count) + " needs "));
      EXPECT_THAT(ExceptionMessage(e), HasSubstr(k.words));
    }
  }
  const auto ring_errors = RunInProcess(2, [&](Transport& tr) {
    RingAllReduce ring(tr, std::size_t{1} << 59, {});  // 2^60 bytes of scratch per rank
  });
  for (const auto& e : ring_errors)
    EXPECT_THAT(ExceptionMessage(e),
                HasSubstr("bytes of scratch, more than this process can allocate"));
}

TEST(SizeProducts, WorkspaceLayoutRefusesSizesThatWrap) {
  const std::size_t m = std::size_t{1} << 61;
  EXPECT_THAT(MessageOf([&] { MakeWorkspaceLayout(4, 1, m, 8, {{0, 1, 1}}, kDefaultSendSlots); }),
              HasSubstr("workspace: rows"));
}

TEST(ThreadLimits, AThreadThatCannotStartIsAnError) {
  // N = 200 ranks under a tight address-space limit: std::terminate before, now TransportError
  // after the ranks that did start were aborted and joined.
  if (kSanitized) GTEST_SKIP() << "address-space limits do not apply under AddressSanitizer";
  const int status = ExitStatusUnderAddressLimit(std::size_t{64} << 20, [] {
    try {
      RunInProcess(200, [](Transport& tr) {
        char byte = 0, in = 0;
        tr.Wait(tr.StartExchange(&byte, &in, 1));
      });
    } catch (const TransportError& e) {
      return std::string(e.what()).find("cannot start the thread of rank") != std::string::npos
                 ? 0 : 2;
    }
    return 3;  // all 200 started: the limit did not bite
  });
  EXPECT_EQ(status, 0) << "0: TransportError; 2: other message; 3: no failure; 106: abort";
}

}  // namespace
}  // namespace cerar
