// Fake CUDA runtime and NCCL entry points (see fake_device.h).
#include "fake_device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cerar::fake {

DeviceState& State() {
  static DeviceState state;
  return state;
}
void Reset() { State() = DeviceState{}; }
int DeviceState::Count(const std::string& name) const {
  return static_cast<int>(std::count(calls.begin(), calls.end(), name));
}
void Log(const char* name) {
  State().calls.emplace_back(name);
  State().placed.push_back(std::string(name) + "@" + std::to_string(State().current));
}
void Launch(cudaError_t status) {
  if (status != cudaSuccess) State().last_error = status;
}

}  // namespace cerar::fake

namespace {
using cerar::fake::Log;
using cerar::fake::State;
// Fake events: a distinct address each, never dereferenced by the code under test.
char event_storage[1];
}  // namespace

extern "C" {

ncclResult_t ncclCommUserRank(const ncclComm_t, int* rank) {
  Log("CommUserRank");
  *rank = State().rank;
  return State().user_rank;
}
ncclResult_t ncclCommCount(const ncclComm_t, int* count) {
  Log("CommCount");
  *count = State().size;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t, int* device) {
  Log("CommCuDevice");
  *device = State().device;
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  Log("GroupStart");
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  Log("GroupEnd");
  return State().group_end;
}
ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  Log("Send");
  return State().send;
}
ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  Log("Recv");
  return State().recv;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
  Log("CommGetAsyncError");
  if (State().async_in_progress > 0) {
    --State().async_in_progress;
    *error = ncclInProgress;
  } else {
    *error = State().async_error;
  }
  return ncclSuccess;
}
// Every rank's value is this rank's: the ranks agree.
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclComm_t, cudaStream_t) {
  Log("AllGather");
  const size_t bytes = count * (type == ncclUint64 ? 8 : 1);
  for (int r = 0; r < State().size; ++r)
    std::memcpy(static_cast<char*>(recv) + size_t(r) * bytes, send, bytes);
  return ncclSuccess;
}
// A communicator is made at once; its initialisation then reports what async_in_progress and
// async_error say (ncclInProgress for a while, then success or an error).
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int, ncclUniqueId, int,
                                    ncclConfig_t* config) {
  Log("CommInitRankConfig");
  State().init_blocking = config->blocking;
  static char storage;
  *comm = reinterpret_cast<ncclComm_t>(&storage);
  return State().init_result;
}
ncclResult_t ncclCommDestroy(ncclComm_t) {
  Log("CommDestroy");
  return State().teardown;
}
ncclResult_t ncclCommAbort(ncclComm_t) {
  Log("CommAbort");
  return State().teardown;
}
const char* ncclGetErrorString(ncclResult_t result) {
  static char text[32];
  std::snprintf(text, sizeof text, "fake nccl status %d", static_cast<int>(result));
  return text;
}
const char* ncclGetLastError(ncclComm_t) { return "fake NCCL detail"; }

cudaError_t cudaGetDevice(int* device) {
  *device = State().current;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  State().current = device;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  Log("StreamSynchronize");
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  Log("Malloc");
  if (State().malloc_result != cudaSuccess) {
    State().last_error = State().malloc_result;  // as the runtime does
    return State().malloc_result;
  }
  *ptr = std::malloc(bytes);
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  Log("Free");
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  Log("MallocHost");
  *ptr = std::malloc(bytes);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* ptr) {
  Log("FreeHost");
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t) {
  Log("MemcpyAsync");
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  Log("EventCreate");
  *event = reinterpret_cast<cudaEvent_t>(event_storage);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) {
  Log("EventRecord");
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  Log("EventQuery");
  return State().event_query;
}
cudaError_t cudaEventDestroy(cudaEvent_t) {
  Log("EventDestroy");
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  const cudaError_t error = State().last_error;
  State().last_error = cudaSuccess;
  return error;
}
cudaError_t cudaPeekAtLastError() { return State().last_error; }
const char* cudaGetErrorString(cudaError_t error) {
  static char text[32];
  std::snprintf(text, sizeof text, "fake cuda error %d", static_cast<int>(error));
  return text;
}

}  // extern "C"
