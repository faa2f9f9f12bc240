#pragma once
// Test-only device transport: N ranks as threads of one process sharing one GPU, each with its
// own stream. NCCL cannot put two ranks of a communicator on one GPU, so this is how the protocol
// engine runs end to end with the CUDA back end on a single-GPU machine.
//
// Stream-ordered like NCCL: StartExchange records "send ready" on the sender's stream, the
// receiver's stream waits for it and copies (cudaMemcpyAsync, device to device), then records
// "consumed"; the sender's Wait makes its stream wait for "consumed" before it may overwrite the
// send buffer. The host only waits for the peer to have *enqueued* its side (with a deadline).
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "cerar/runtime/transport.h"

namespace cerar::test {

class DeviceRingWorld;

// Runs body(rank, transport, stream) on N threads (device 0, one stream each); rethrows the
// first rank's exception after all have finished. A failing rank aborts the others' waits.
void RunOnDeviceRing(int N, const std::function<void(int, Transport&, cudaStream_t)>& body);

}  // namespace cerar::test
