// In-process transport (see cerar/runtime/inprocess.h for the model and its fault handling).
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "cerar/errors.h"
#include "cerar/runtime/inprocess.h"
#include "deadline.h"

namespace cerar {

using detail::Clock;

struct InProcessWorld::State {
  int size = 0;
  InProcessOptions options;
  // One mutex and condition variable for the whole world: simple, and the copies happen outside
  // the lock.
  std::mutex mu;
  std::condition_variable cv;
  bool aborted = false;
  std::string abort_reason;
  // links[i]: messages from rank i to rank i+1, oldest first.
  struct Link {
    std::deque<std::vector<char>> messages;
  };
  std::vector<Link> links;
  // waiting[r]: rank r is blocked in Wait for its predecessor. A rank whose own deadline passes
  // while its predecessor is also blocked keeps waiting (up to N extra timeouts), so the error
  // comes from the successor of the rank that actually stopped and names that rank.
  std::vector<bool> waiting;
  int num_waiting = 0;
  // issued[r]: MakeTransport(r) has been called. Two transports of one rank would take each
  // other's messages off the same link, so a second one is refused.
  std::vector<bool> issued;
  // CheckAgreement: values per generation, per rank.
  std::map<std::uint64_t, std::vector<std::optional<std::uint64_t>>> agreement;
  std::map<std::uint64_t, int> agreement_done;

  std::string FormatSeconds() const {
    std::ostringstream s;
    s << options.timeout_s << " s";
    return s.str();
  }
};

namespace {

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<InProcessWorld::State> state, int rank)
      : s_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return s_->size; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override {
    std::vector<char> msg(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      ThrowIfAborted("sending to rank " + std::to_string(next()));
      auto& out = s_->links[rank_];
      out.messages.push_back(std::move(msg));
    }
    s_->cv.notify_all();
    bytes_sent_ += bytes;
    posted_.push_back({recv, bytes});
    return next_handle_++;
  }

  void Wait(Handle handle) override {
    if (handle >= next_handle_)
      throw InvalidArgument("in-process transport: rank " + std::to_string(rank_) +
                            " waits on exchange " + std::to_string(handle) + " never started");
    // Receives complete in order: take messages from the link until `handle` is filled. Sends
    // were buffered at StartExchange, so they are already complete.
    while (completed_ <= handle) {
      std::vector<char> msg;
      {
        std::unique_lock<std::mutex> lock(s_->mu);
        auto& in = s_->links[prev()];
        auto deadline = DeadlineAfter(Clock::now());
        int extensions = 0;
        SetWaiting(true);
        while (in.messages.empty()) {
          ThrowIfAborted("waiting for data from rank " + std::to_string(prev()), true);
          if (s_->cv.wait_until(lock, deadline) == std::cv_status::timeout && in.messages.empty()) {
            ThrowIfAborted("waiting for data from rank " + std::to_string(prev()), true);
            // The predecessor is starved too: the fault is further up the ring.
            if (s_->waiting[prev()] && s_->num_waiting < s_->size && extensions++ < s_->size) {
              deadline = DeadlineAfter(deadline);
              continue;
            }
            SetWaiting(false);
            throw TransportError("rank " + std::to_string(rank_) + ": no data from rank " +
                                 std::to_string(prev()) + " for " + s_->FormatSeconds() +
                                 " (in-process transport, exchange " +
                                 std::to_string(completed_) + ")");
          }
        }
        SetWaiting(false);
        msg = std::move(in.messages.front());
        in.messages.pop_front();
      }
      const Posted p = posted_.front();
      posted_.pop_front();
      if (msg.size() != p.bytes)
        throw TransportError("rank " + std::to_string(rank_) + ": exchange " +
                             std::to_string(completed_) + " expected " + std::to_string(p.bytes) +
                             " bytes from rank " + std::to_string(prev()) + ", got " +
                             std::to_string(msg.size()) + " (ranks run different schedules)");
      if (p.bytes) std::memcpy(p.recv, msg.data(), p.bytes);
      ++completed_;
    }
  }

  void CheckAgreement(const std::string& what, std::uint64_t value) override {
    const std::uint64_t gen = agreement_gen_++;
    std::vector<std::optional<std::uint64_t>> values;
    {
      std::unique_lock<std::mutex> lock(s_->mu);
      auto& slot = s_->agreement[gen];
      slot.resize(s_->size);
      slot[rank_] = value;
      s_->cv.notify_all();
      const auto deadline = DeadlineAfter(Clock::now());
      auto all_in = [&] {
        for (const auto& v : slot)
          if (!v) return false;
        return true;
      };
      while (!all_in()) {
        ThrowIfAborted("checking agreement on " + what);
        if (s_->cv.wait_until(lock, deadline) == std::cv_status::timeout && !all_in()) {
          int missing = 0;
          while (slot[missing]) ++missing;
          throw TransportError("rank " + std::to_string(rank_) + ": rank " +
                               std::to_string(missing) + " did not join the check of " + what +
                               " for " + s_->FormatSeconds());
        }
      }
      values.assign(slot.begin(), slot.end());
      if (++s_->agreement_done[gen] == s_->size) {
        s_->agreement.erase(gen);
        s_->agreement_done.erase(gen);
      }
    }
    for (int r = 0; r < static_cast<int>(values.size()); ++r)
      if (*values[r] != *values[0])
        throw TransportError("ranks disagree on " + what + ": rank 0 has " +
                             std::to_string(*values[0]) + ", rank " + std::to_string(r) + " has " +
                             std::to_string(*values[r]) + " (seen by rank " +
                             std::to_string(rank_) + ")");
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }

 private:
  struct Posted {
    void* recv;
    std::size_t bytes;
  };
  int next() const { return (rank_ + 1) % s_->size; }
  int prev() const { return (rank_ + s_->size - 1) % s_->size; }
  Clock::time_point DeadlineAfter(Clock::time_point from) const {
    return detail::DeadlineAfter(from, s_->options.timeout_s);
  }
  // Called with the lock held.
  void SetWaiting(bool on) {
    if (s_->waiting[rank_] == on) return;
    s_->waiting[rank_] = on;
    s_->num_waiting += on ? 1 : -1;
  }
  void ThrowIfAborted(const std::string& doing, bool waiting = false) {
    if (s_->aborted && waiting) SetWaiting(false);
    if (s_->aborted)
      throw TransportError("rank " + std::to_string(rank_) + ": aborted while " + doing + ": " +
                           s_->abort_reason);
  }

  std::shared_ptr<InProcessWorld::State> s_;
  int rank_;
  std::uint64_t bytes_sent_ = 0;
  Handle next_handle_ = 0;
  Handle completed_ = 0;
  std::deque<Posted> posted_;
  std::uint64_t agreement_gen_ = 0;
};

}  // namespace

InProcessWorld::InProcessWorld(int size, InProcessOptions options)
    : state_(std::make_shared<State>()) {
  if (size < 1)
    throw InvalidArgument("in-process world: size " + std::to_string(size) + ", expected >= 1");
  if (!(options.timeout_s > 0))
    throw InvalidArgument("in-process world: timeout " + std::to_string(options.timeout_s) +
                          " s, expected > 0");
  state_->size = size;
  state_->options = options;
  state_->links.resize(size);
  state_->waiting.assign(size, false);
  state_->issued.assign(size, false);
}

InProcessWorld::~InProcessWorld() = default;

int InProcessWorld::size() const { return state_->size; }

std::unique_ptr<Transport> InProcessWorld::MakeTransport(int rank) {
  if (rank < 0 || rank >= state_->size)
    throw InvalidArgument("in-process world: rank " + std::to_string(rank) + " outside [0, " +
                          std::to_string(state_->size) + ")");
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->issued[rank])
      throw InvalidArgument("in-process world: rank " + std::to_string(rank) +
                            " already has a transport; MakeTransport is called once per rank");
    state_->issued[rank] = true;
  }
  return std::make_unique<InProcessTransport>(state_, rank);
}

void InProcessWorld::Abort(int rank, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->aborted) {
      state_->aborted = true;
      state_->abort_reason = "rank " + std::to_string(rank) + " failed: " + reason;
    }
  }
  state_->cv.notify_all();
}

std::string ExceptionMessage(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::vector<std::exception_ptr> RunInProcess(int size,
                                             const std::function<void(Transport&)>& body,
                                             InProcessOptions options) {
  InProcessWorld world(size, options);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int r = 0; r < size; ++r) transports.push_back(world.MakeTransport(r));
  std::vector<std::thread> threads;
  threads.reserve(size);
  std::string failed_start;
  for (int r = 0; r < size && failed_start.empty(); ++r) {
    try {
      threads.emplace_back([&, r] {
        try {
          body(*transports[r]);
        } catch (...) {
          errors[r] = std::current_exception();
          world.Abort(r, ExceptionMessage(errors[r]));
        }
      });
    } catch (const std::system_error& e) {
      // Out of threads (or of address space for their stacks): the ranks already running would
      // wait for the missing ones, so abort them, join them, and report it in one line.
      failed_start = "in-process transport: cannot start the thread of rank " +
                     std::to_string(r) + " of " + std::to_string(size) + " (" + e.what() +
                     "); each rank needs a thread of its own: raise the thread or "
                     "address-space limit (ulimit -u, -v) or run this N over MPI";
      world.Abort(r, failed_start);
    }
  }
  for (auto& t : threads) t.join();
  if (!failed_start.empty()) throw TransportError(failed_start);
  return errors;
}

}  // namespace cerar
