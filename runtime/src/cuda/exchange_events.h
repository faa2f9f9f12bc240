#pragma once
// One CUDA event per exchange in flight, recorded on the stream after the exchange, so that the
// host can poll its completion (cudaEventQuery) against a deadline instead of synchronising the
// stream, which has none. An event is reused once its exchange is complete.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace cerar::cuda {

class ExchangeEvents {
 public:
  ExchangeEvents() = default;
  ~ExchangeEvents();  // cudaEventDestroy does not wait for the stream
  ExchangeEvents(const ExchangeEvents&) = delete;
  ExchangeEvents& operator=(const ExchangeEvents&) = delete;

  void Record(std::uint64_t handle, cudaStream_t stream);
  bool empty() const { return pending_.empty(); }
  std::uint64_t front_handle() const { return pending_.front().handle; }
  cudaEvent_t front_event() const { return pending_.front().event; }
  void PopFront();  // the oldest exchange is complete
  void PopAll();    // every exchange is complete (the stream passed a later event)
  // Pops the exchanges already complete, oldest first, without blocking.
  void PopCompleted();

 private:
  struct Entry {
    std::uint64_t handle;
    cudaEvent_t event;
  };
  std::deque<Entry> pending_;
  std::vector<cudaEvent_t> spare_;
};

// Creates an event for polling (no timing: cheaper to record).
cudaEvent_t CreatePollEvent();
// Whether the stream has passed `event` (cudaEventQuery), without blocking; DeviceError on an
// error (a sticky one of the context, or of an earlier launch).
bool EventDone(cudaEvent_t event);

}  // namespace cerar::cuda
