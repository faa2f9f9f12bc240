#pragma once
// Shared by the tests of the NCCL transport and bootstrap against the fake NCCL (fake_device.h):
// a fixture whose communicator is rank 1 of 4, a short timeout, and the checks of messages.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>

#include "cerar/errors.h"
#include "cerar/runtime/cuda/nccl_transport.h"
#include "fake_device.h"

namespace cerar::test {

class FakeRankOneOfFour : public ::testing::Test {
 protected:
  void SetUp() override {
    fake::Reset();
    fake::State().rank = 1;
    fake::State().size = 4;
  }
};

inline NcclTransportOptions Quick() {
  NcclTransportOptions o;
  o.timeout_s = 0.2;
  return o;
}

// The TransportError's message, or says what else happened.
inline std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const TransportError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a TransportError: ") + e.what();
  }
  return "no throw";
}

// MessageOf(f), checking that f gave up after Quick()'s timeout and not much later.
inline std::string MessageAfterTheTimeout(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  const std::string text = MessageOf(f);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, Quick().timeout_s);
  EXPECT_LT(took, 5.0);
  return text;
}

inline void ExpectContains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

}  // namespace cerar::test
