#pragma once
// Test-only compute back ends and transports for the engine checks that need no device: the CPU
// back end behind a wrapper that can fail in Free (as the CUDA back end's cudaFree does after a
// sticky error) or claim device memory and a stream (as the CUDA back end does); a transport of
// rank 0 in device memory whose exchanges move nothing.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cerar/errors.h"
#include "cerar/runtime/backend.h"
#include "cerar/runtime/transport.h"

namespace cerar::test {

class WrappedCpuBackend final : public ComputeBackend {
 public:
  WrappedCpuBackend() : inner_(CreateCpuBackend()) {}

  bool free_throws = false;                      // Free throws DeviceError (and frees nothing)
  MemorySpace space = MemorySpace::kHost;        // what memory_space() claims
  const void* stream = nullptr;                  // what device_stream() claims
  int frees = 0;                                 // Free calls that freed
  std::vector<std::string>* log = nullptr;       // Synchronize appends "Synchronize"

  MemorySpace memory_space() const override { return space; }
  const void* device_stream() const override { return stream; }
  bool Supports(DType d) const override { return inner_->Supports(d); }
  bool SupportsAccumulation(DType d, Accumulation a) const override {
    return inner_->SupportsAccumulation(d, a);
  }
  void* Allocate(std::size_t bytes) override { return inner_->Allocate(bytes); }
  void Free(void* ptr) override {
    if (free_throws) throw DeviceError("CUDA call cudaFree(ptr) failed: error 700 (fake)");
    ++frees;
    inner_->Free(ptr);
  }
  void SetMatrices(const MatrixXd& e, const MatrixXd& d) override { inner_->SetMatrices(e, d); }
  void SetAccumulation(Accumulation a) override { inner_->SetAccumulation(a); }
  void Encode(DType dt, const void* g, std::size_t m, std::size_t col0, std::size_t cols, int kc,
              RowRange rows, void* enc, std::size_t ld) override {
    inner_->Encode(dt, g, m, col0, cols, kc, rows, enc, ld);
  }
  void Step(DType dt, const void* e_now, const void* y_prev, const void* e_back, void* x,
            void* obs, std::size_t len) override {
    inner_->Step(dt, e_now, y_prev, e_back, x, obs, len);
  }
  bool FeedsBackRounding(DType d) const override { return inner_->FeedsBackRounding(d); }
  std::size_t StateElementBytes(DType d) const override { return inner_->StateElementBytes(d); }
  void StepWithFeedback(DType dt, const void* e_now, const void* y_prev, const void* e_back,
                        const void* fb_in, void* x, void* obs, void* fb_out,
                        std::size_t len) override {
    inner_->StepWithFeedback(dt, e_now, y_prev, e_back, fb_in, x, obs, fb_out, len);
  }
  void Decode(DType dt, const void* obs, std::size_t ld, void* g, std::size_t m, std::size_t col0,
              std::size_t cols, int kc, double scale) override {
    inner_->Decode(dt, obs, ld, g, m, col0, cols, kc, scale);
  }
  void Scale(DType dt, void* x, std::size_t len, double scale) override {
    inner_->Scale(dt, x, len, scale);
  }
  void Synchronize() override {
    if (log) log->push_back("Synchronize");
  }

 private:
  std::unique_ptr<ComputeBackend> inner_;
};

// Rank 0 of `size` in device memory on a given stream; exchanges move nothing (the peers are
// imaginary); counts the collective checks it is asked for.
class DeviceTransport final : public Transport {
 public:
  explicit DeviceTransport(const void* stream, int size) : stream_(stream), size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const void* device_stream() const override { return stream_; }
  Handle StartExchange(const void*, void*, std::size_t) override { return ++issued_; }
  void Wait(Handle) override {}
  void CheckAgreement(const std::string&, std::uint64_t) override { ++checks; }
  std::uint64_t bytes_sent() const override { return 0; }
  void ResetCounters() override {}
  int checks = 0;

 private:
  const void* stream_;
  int size_;
  Handle issued_ = 0;
};

}  // namespace cerar::test
