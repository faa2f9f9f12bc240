// Events of the exchanges in flight (exchange_events.h).
#include "exchange_events.h"

#include "checks.h"

namespace cerar::cuda {

cudaEvent_t CreatePollEvent() {
  cudaEvent_t event = nullptr;
  CERAR_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

bool EventDone(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) return false;
  if (status != cudaSuccess) {
    ClearPendingError();
    ThrowDeviceError("CUDA", "cudaEventQuery(event)", __FILE__, __LINE__,
                     static_cast<int>(status), cudaGetErrorString(status));
  }
  return true;
}

ExchangeEvents::~ExchangeEvents() {
  PopAll();
  for (cudaEvent_t event : spare_) CERAR_CUDA_REPORT(cudaEventDestroy(event));
}

void ExchangeEvents::Record(std::uint64_t handle, cudaStream_t stream) {
  if (spare_.empty()) spare_.push_back(CreatePollEvent());
  cudaEvent_t event = spare_.back();
  CERAR_CUDA_CHECK(cudaEventRecord(event, stream));
  spare_.pop_back();
  pending_.push_back({handle, event});
}

void ExchangeEvents::PopFront() {
  spare_.push_back(pending_.front().event);
  pending_.pop_front();
}

void ExchangeEvents::PopAll() {
  while (!pending_.empty()) PopFront();
}

void ExchangeEvents::PopCompleted() {
  while (!pending_.empty() && EventDone(pending_.front().event)) PopFront();
}

}  // namespace cerar::cuda
