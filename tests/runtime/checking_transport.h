#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "cerar/runtime/transport.h"

namespace cerar::test {

// A Transport around another that checks how the engine uses it: no exchange's send or receive
// buffer is reused (written by a Step or a receive) while that exchange may be in flight, no
// handle is waited for once it is complete (no double waits), at most send_slots exchanges are in
// flight, every exchange is complete when Run returns, and Progress is called.
class CheckingTransport final : public Transport {
 public:
  explicit CheckingTransport(Transport& inner) : in_(inner) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  MemorySpace memory_space() const override { return in_.memory_space(); }
  const void* device_stream() const override { return in_.device_stream(); }
  void Finish() override {
    ++finish_calls;
    in_.Finish();
  }
  bool MayStillWrite() const override { return in_.MayStillWrite(); }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override {
    const Range s{static_cast<const char*>(send), bytes}, r{static_cast<const char*>(recv), bytes};
    for (std::size_t h = completed_; h < started_.size(); ++h)
      for (const Range& mine : {s, r})
        for (const Range& theirs : {started_[h].send, started_[h].recv})
          if (mine.Overlaps(theirs)) ++overlaps;
    inner_.push_back(in_.StartExchange(send, recv, bytes));
    started_.push_back({s, r});
    max_in_flight = std::max(max_in_flight, started_.size() - completed_);
    return started_.size() - 1;
  }
  void Wait(Handle h) override {
    ASSERT_LT(h, started_.size());
    if (h < completed_) ++redundant_waits;
    in_.Wait(inner_[h]);
    completed_ = std::max<std::size_t>(completed_, h + 1);
  }
  void Progress() override {
    ++progress_calls;
    in_.Progress();
  }
  void CheckAgreement(const std::string& what, std::uint64_t value) override {
    in_.CheckAgreement(what, value);
  }
  std::uint64_t bytes_sent() const override { return in_.bytes_sent(); }
  void ResetCounters() override { in_.ResetCounters(); }

  std::size_t started() const { return started_.size(); }
  std::size_t completed() const { return completed_; }
  int overlaps = 0, redundant_waits = 0;
  std::size_t max_in_flight = 0, progress_calls = 0, finish_calls = 0;

 private:
  struct Range {
    const char* p;
    std::size_t n;
    bool Overlaps(const Range& o) const { return n && o.n && p < o.p + o.n && o.p < p + n; }
  };
  struct Started {
    Range send, recv;
  };
  Transport& in_;
  std::vector<Handle> inner_;
  std::vector<Started> started_;
  std::size_t completed_ = 0;
};

}  // namespace cerar::test
