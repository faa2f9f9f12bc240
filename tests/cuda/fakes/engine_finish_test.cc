// A stream-ordered transport's Wait returns at once, so the engines must ask it to finish (with
// its deadline) before they wait for the device: otherwise a missing peer kept the back end's
// Synchronize waiting forever.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/inprocess.h"
#include "host_backends.h"
#include "test_designs.h"

namespace cerar {
namespace {

// The in-process transport, logging Finish.
class FinishLog final : public Transport {
 public:
  FinishLog(Transport& in, std::vector<std::string>& log) : in_(in), log_(log) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  Handle StartExchange(const void* s, void* r, std::size_t b) override {
    return in_.StartExchange(s, r, b);
  }
  void Wait(Handle h) override { in_.Wait(h); }
  void Finish() override {
    log_.push_back("Finish");
    if (fail_finish) throw TransportError("fake: exchange 3 did not complete");
  }
  bool MayStillWrite() const override { return may_still_write; }
  bool fail_finish = false;
  bool may_still_write = true;
  void CheckAgreement(const std::string& w, std::uint64_t v) override { in_.CheckAgreement(w, v); }
  std::uint64_t bytes_sent() const override { return in_.bytes_sent(); }
  void ResetCounters() override { in_.ResetCounters(); }

 private:
  Transport& in_;
  std::vector<std::string>& log_;
};

TEST(EngineFinish, EachRunFinishesTheTransportBeforeSynchronisingTheBackEnd) {
  const Design d = test::RandomDesign(2, 2, 1);
  const auto errors = RunInProcess(2, [&](Transport& in) {
    std::vector<std::string> log;
    FinishLog tr(in, log);
    test::WrappedCpuBackend be;
    be.log = &log;
    std::vector<float> x(10, 1.0f);
    CodedAllReduce(d, tr, be, x.size(), AllReduceOptions{}).Run(x.data());
    RingAllReduce(tr, be, x.size(), AllReduceOptions{}).Run(x.data());
    EXPECT_EQ(log, (std::vector<std::string>{"Finish", "Synchronize", "Finish", "Synchronize"}));
  });
  for (const auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
}

// After a failed run the engine keeps its buffer only while the transport may still write into
// it: an aborted NCCL communicator cannot (F8), an MPI receive already matched can.
TEST(EngineFinish, AFailedRunFreesItsBufferOnlyWhenNothingCanStillWriteIntoIt) {
  const Design d = test::RandomDesign(2, 2, 1);
  for (const bool may_still_write : {true, false}) {
    const auto errors = RunInProcess(2, [&](Transport& in) {
      std::vector<std::string> log;
      FinishLog tr(in, log);
      tr.fail_finish = true;
      tr.may_still_write = may_still_write;
      test::WrappedCpuBackend be;
      std::vector<float> x(10, 1.0f);
      {
        CodedAllReduce coded(d, tr, be, x.size(), AllReduceOptions{});
        EXPECT_THROW(coded.Run(x.data()), TransportError);
      }
      {
        RingAllReduce ring(tr, be, x.size(), AllReduceOptions{});
        EXPECT_THROW(ring.Run(x.data()), TransportError);
      }
      EXPECT_EQ(be.frees, may_still_write ? 0 : 2) << "may_still_write " << may_still_write;
    });
    for (const auto& e : errors) EXPECT_FALSE(e) << ExceptionMessage(e);
  }
}

}  // namespace
}  // namespace cerar
