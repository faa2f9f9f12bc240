#pragma once
// CUDA compute back end (PROTOCOL.md §2-§3 on the GPU): Encode and Decode are one cuBLAS GEMM
// each, Step is one fused elementwise kernel. Everything is enqueued on the caller's stream; the
// host synchronises in SetMatrices, Free, Synchronize, Prepare and the destructor. A
// float64-state step stages y in scratch memory that the engine's Prepare allocates before any
// run (a direct Step caller's first or longer such step allocates it, and synchronises).
//
// dtypes: float32 and float64 (native), bfloat16 and float16 buffers with float32 accumulation
// (the encoder and decoder are then held in the buffer's type, as cublasGemmEx requires equal
// A/B types; see docs/cuda.md for what that costs in accuracy).
// The back end works on the device that is current when it is created; every call, and the
// destructor, switches to that device and back. The stream is borrowed, never destroyed; it must
// be the stream the transport enqueues on (CreateNcclTransport) so the whole all-reduce is
// stream-ordered (the engines refuse two different streams, InvalidArgument), and it must
// outlive the back end (the destructor synchronises it). nullptr, the default, is the legacy
// stream: a transport on a stream of its own does not share it.
#include <cuda_runtime_api.h>

#include <memory>

#include "cerar/runtime/backend.h"

namespace cerar {

std::unique_ptr<ComputeBackend> CreateCudaBackend(cudaStream_t stream = nullptr);

}  // namespace cerar
