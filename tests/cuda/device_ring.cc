// Test-only stream-ordered ring of N ranks on one GPU (see device_ring.h).
#include "device_ring.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "checks.h"

namespace cerar::test {

namespace {
constexpr auto kDeadline = std::chrono::seconds(60);
}

class DeviceRingWorld {
 public:
  explicit DeviceRingWorld(int N) : N_(N), agreements_(static_cast<std::size_t>(N)) {}
  ~DeviceRingWorld() {
    // Every rank synchronised its stream before returning; events are complete.
    for (auto& [key, post] : posts_) cudaEventDestroy(post.ready);
    for (auto& [key, ev] : consumed_) cudaEventDestroy(ev);
  }

  int N() const { return N_; }

  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

  struct Post {
    const void* send = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t ready = nullptr;
  };

  void PostSend(int rank, std::uint64_t k, Post post) {
    std::lock_guard<std::mutex> lock(mu_);
    posts_[{rank, k}] = post;
    cv_.notify_all();
  }
  Post AwaitSend(int rank, int from, std::uint64_t k) {
    std::unique_lock<std::mutex> lock(mu_);
    Await(lock, rank, from, [&] { return posts_.count({from, k}) > 0; });
    return posts_[{from, k}];
  }
  void PostConsumed(int sender, std::uint64_t k, cudaEvent_t ev) {
    std::lock_guard<std::mutex> lock(mu_);
    consumed_[{sender, k}] = ev;
    cv_.notify_all();
  }
  cudaEvent_t AwaitConsumed(int rank, std::uint64_t k) {
    std::unique_lock<std::mutex> lock(mu_);
    Await(lock, rank, (rank + 1) % N_, [&] { return consumed_.count({rank, k}) > 0; });
    return consumed_[{rank, k}];
  }
  // All ranks' values for agreement number `a` (blocks until every rank has given one).
  std::vector<std::uint64_t> Agree(int rank, std::size_t a, std::uint64_t value) {
    std::unique_lock<std::mutex> lock(mu_);
    if (agreements_[std::size_t(rank)].size() <= a) agreements_[std::size_t(rank)].resize(a + 1);
    agreements_[std::size_t(rank)][a] = value;
    cv_.notify_all();
    std::vector<std::uint64_t> out(static_cast<std::size_t>(N_));
    for (int r = 0; r < N_; ++r) {
      Await(lock, rank, r, [&] { return agreements_[std::size_t(r)].size() > a; });
      out[std::size_t(r)] = agreements_[std::size_t(r)][a];
    }
    return out;
  }

 private:
  template <typename Pred>
  void Await(std::unique_lock<std::mutex>& lock, int rank, int peer, Pred ready) {
    if (!cv_.wait_for(lock, kDeadline, [&] { return aborted_ || ready(); }))
      throw TransportError("device ring: rank " + std::to_string(rank) + " waited 60 s for rank " +
                           std::to_string(peer));
    if (aborted_ && !ready())
      throw TransportError("device ring: rank " + std::to_string(rank) +
                           " stopped because another rank failed");
  }

  int N_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::map<std::pair<int, std::uint64_t>, Post> posts_;
  std::map<std::pair<int, std::uint64_t>, cudaEvent_t> consumed_;
  std::vector<std::vector<std::uint64_t>> agreements_;
};

namespace {

class DeviceRingTransport final : public Transport {
 public:
  DeviceRingTransport(DeviceRingWorld& world, int rank, cudaStream_t stream)
      : world_(world), rank_(rank), stream_(stream) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.N(); }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }
  const void* device_stream() const override { return stream_; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override {
    const std::uint64_t k = issued_;
    cudaEvent_t ready;
    CERAR_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CERAR_CUDA_CHECK(cudaEventRecord(ready, stream_));
    world_.PostSend(rank_, k, {send, bytes, ready});
    const int prev = (rank_ + world_.N() - 1) % world_.N();
    const auto in = world_.AwaitSend(rank_, prev, k);
    if (in.bytes != bytes)
      throw TransportError("device ring: rank " + std::to_string(rank_) + " expects " +
                           std::to_string(bytes) + " bytes in exchange " + std::to_string(k) +
                           ", rank " + std::to_string(prev) + " sends " + std::to_string(in.bytes));
    CERAR_CUDA_CHECK(cudaStreamWaitEvent(stream_, in.ready, 0));
    if (bytes > 0)
      CERAR_CUDA_CHECK(cudaMemcpyAsync(recv, in.send, bytes, cudaMemcpyDeviceToDevice, stream_));
    cudaEvent_t consumed;
    CERAR_CUDA_CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
    CERAR_CUDA_CHECK(cudaEventRecord(consumed, stream_));
    world_.PostConsumed(prev, k, consumed);
    bytes_sent_ += bytes;
    return ++issued_;
  }

  void Wait(Handle handle) override {
    if (handle == 0 || handle > issued_)
      throw InvalidArgument("device ring: Wait on handle " + std::to_string(handle) +
                            " never issued");
    // The receive is already ordered on our stream; the send buffer may be reused only once the
    // successor has copied it.
    CERAR_CUDA_CHECK(cudaStreamWaitEvent(stream_, world_.AwaitConsumed(rank_, handle - 1), 0));
  }

  void CheckAgreement(const std::string& what, std::uint64_t value) override {
    const auto all = world_.Agree(rank_, agreements_++, value);
    for (int r = 0; r < world_.N(); ++r)
      if (all[std::size_t(r)] != value)
        throw TransportError("ranks disagree on " + what + ": rank " + std::to_string(rank_) +
                             " has " + std::to_string(value) + ", rank " + std::to_string(r) +
                             " has " + std::to_string(all[std::size_t(r)]));
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }

 private:
  DeviceRingWorld& world_;
  int rank_;
  cudaStream_t stream_;
  std::uint64_t issued_ = 0;
  std::size_t agreements_ = 0;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace

void RunOnDeviceRing(int N, const std::function<void(int, Transport&, cudaStream_t)>& body) {
  DeviceRingWorld world(N);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(N));
  std::vector<std::thread> threads;
  for (int r = 0; r < N; ++r) {
    threads.emplace_back([&, r] {
      cudaStream_t stream = nullptr;
      try {
        CERAR_CUDA_CHECK(cudaSetDevice(0));
        CERAR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        DeviceRingTransport transport(world, r, stream);
        body(r, transport, stream);
        CERAR_CUDA_CHECK(cudaStreamSynchronize(stream));
      } catch (...) {
        errors[std::size_t(r)] = std::current_exception();
        world.Abort();
      }
      if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
      }
    });
  }
  for (auto& t : threads) t.join();
  cudaDeviceSynchronize();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace cerar::test
