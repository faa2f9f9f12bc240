// MPI transport (see cerar/runtime/mpi_transport.h).
#include "cerar/runtime/mpi_transport.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cxxabi.h>
#include <cstdio>
#include <deque>
#include <exception>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cerar/errors.h"
#include "deadline.h"
#include "mpi/mpi_check.h"
#include "run_timer.h"

namespace cerar {
namespace {

using detail::Clock;

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, MpiTransportOptions options) : options_(options) {
    if (!(options.timeout_s > 0))
      throw InvalidArgument("MPI transport: timeout " + std::to_string(options.timeout_s) +
                            " s, expected > 0");
    if (!(options.interrupt_every_s > 0))
      throw InvalidArgument("MPI transport: interrupt_every_s " +
                            std::to_string(options.interrupt_every_s) + " s, expected > 0");
    // The caller's communicator keeps its own error handler; ours returns error codes.
    CERAR_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    CERAR_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    CERAR_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    CERAR_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }

  ~MpiTransport() override {
    // With requests still pending (a run that threw), freeing the communicator could block;
    // leave it to MPI_Abort / MPI_Finalize. A transport that outlives MPI_Finalize (a static)
    // must not touch MPI any more.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (pending_.empty() && failure_.empty() && !finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Handle StartExchange(const void* send, void* recv, std::size_t bytes) override {
    CheckUsable();
    if (bytes > static_cast<std::size_t>(INT_MAX))
      throw InvalidArgument("MPI transport: message of " + std::to_string(bytes) +
                            " bytes exceeds INT_MAX; use a smaller segment size");
    const int n = static_cast<int>(bytes);
    Pending p;
    p.bytes = bytes;
    CERAR_MPI_CHECK(MPI_Irecv(recv, n, MPI_BYTE, prev(), options_.tag, comm_, &p.req[0]));
    CERAR_MPI_CHECK(
        MPI_Isend(const_cast<void*>(send), n, MPI_BYTE, next(), options_.tag, comm_, &p.req[1]));
    pending_.push_back(p);
    bytes_sent_ += bytes;
    return next_handle_++;
  }

  void Wait(Handle handle) override {
    CheckUsable();
    if (handle >= next_handle_)
      throw InvalidArgument("MPI transport: rank " + std::to_string(rank_) +
                            " waits on exchange " + std::to_string(handle) + " never started");
    while (completed_ <= handle) {
      const auto deadline = Deadline();
      for (int polls = 0; !RetireFront(); ++polls) {
        const auto now = Clock::now();
        if (now > deadline) {
          const Pending& p = pending_.front();
          if (p.req[0] != MPI_REQUEST_NULL)
            Fail("rank " + std::to_string(rank_) + ": no data from rank " +
                 std::to_string(prev()) + " for " + Seconds() + " (MPI transport, exchange " +
                 std::to_string(completed_) + ", " + std::to_string(p.bytes) + " bytes)");
          Fail("rank " + std::to_string(rank_) + ": rank " + std::to_string(next()) +
               " took no data for " + Seconds() + " (MPI transport, exchange " +
               std::to_string(completed_) + ")");
        }
        PollInterrupt(now, [&] { return "exchange " + std::to_string(completed_); });
        detail::PauseBetweenPolls(polls);
      }
    }
  }

  void Progress() override {
    // Any MPI_Test drives Open MPI's whole progress engine; testing the oldest exchanges also
    // retires those that are complete, so a later Wait returns at once.
    while (!pending_.empty() && RetireFront()) {
    }
  }
  void CheckAgreement(const std::string& what, std::uint64_t value) override {
    CheckUsable();
    // all[0 .. size): every rank's value; all[size]: this rank's, sent from there (one block,
    // abandoned whole if the check times out with the all-gather still posted).
    std::vector<unsigned long long> all(size_ + 1);
    all[size_] = value;
    MPI_Request req;
    CERAR_MPI_CHECK(MPI_Iallgather(&all[size_], 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1,
                                   MPI_UNSIGNED_LONG_LONG, comm_, &req));
    const auto deadline = Deadline();
    for (int done = 0, spins = 0; !done; ++spins) {
      CERAR_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
      if (done) break;
      const auto now = Clock::now();
      if (now > deadline) {
        // The all-gather stays posted on `all`: keep its block alive, as a failed run's buffers.
        detail::Abandon(new std::vector<unsigned long long>(std::move(all)));
        Fail("rank " + std::to_string(rank_) + ": not every rank joined the check of " + what +
             " within " + Seconds() + " (MPI transport)");
      }
      PollInterrupt(now, [&] {
        detail::Abandon(new std::vector<unsigned long long>(std::move(all)));  // as above
        return "the check of " + what;
      });
      detail::PauseBetweenPolls(spins);
    }
    for (int r = 0; r < size_; ++r)
      if (all[r] != all[0])
        throw TransportError("ranks disagree on " + what + ": rank 0 has " +
                             std::to_string(all[0]) + ", rank " + std::to_string(r) + " has " +
                             std::to_string(all[r]) + " (seen by rank " + std::to_string(rank_) +
                             ")");
  }

  std::uint64_t bytes_sent() const override { return bytes_sent_; }
  void ResetCounters() override { bytes_sent_ = 0; }

 private:
  // A timeout leaves the ranks anywhere in the protocol: the transport refuses further work
  // (a second run on it mixed its exchanges with the failed run's and crashed), and cancels the
  // receives it had posted, so that a peer's late message does not land in buffers their owners
  // may free. A receive already matched cannot be cancelled: engines keep their buffers after
  // a failed run for that reason (allreduce.h).
  [[noreturn]] void Fail(const std::string& message) {
    GiveUp(message);
    throw TransportError(message);
  }
  void GiveUp(const std::string& message) {
    failure_ = message;
    for (Pending& p : pending_) {
      if (p.req[0] != MPI_REQUEST_NULL) {
        MPI_Cancel(&p.req[0]);  // best effort: errors here change nothing for the caller
        MPI_Request_free(&p.req[0]);
      }
      if (p.req[1] != MPI_REQUEST_NULL) MPI_Request_free(&p.req[1]);  // the send may go on
    }
    pending_.clear();
  }
  // Runs the caller's interrupt check when one is due (every interrupt_every_s, counted across
  // waits, so that a run of short waits is checked too). What it throws fails the transport as a
  // timeout does, nested in a TransportError that names what was waited for: `waiting_for()`,
  // called only then (CheckAgreement abandons its posted block there).
  template <typename F>
  void PollInterrupt(Clock::time_point now, F&& waiting_for) {
    if (!options_.interrupt_check || now < next_interrupt_check_) return;
    next_interrupt_check_ = detail::DeadlineAfter(now, options_.interrupt_every_s);
    try {
      options_.interrupt_check();
    } catch (const std::exception& e) {
      Interrupted(waiting_for(), e.what());
    } catch (abi::__forced_unwind&) {
      throw;  // a thread ended by pthread_exit (Python finalising) must keep unwinding
    } catch (...) {
      Interrupted(waiting_for(), "an exception that is not a std::exception");
    }
  }
  // Called in the handler of the interrupt check's exception, which it nests.
  [[noreturn]] void Interrupted(const std::string& waiting_for, const std::string& reason) {
    // The first line only: a Python error's text may go on with its traceback.
    const std::string message = "rank " + std::to_string(rank_) + ": interrupted while waiting " +
                                "for " + waiting_for + " (MPI transport; the interrupt check " +
                                "raised " + reason.substr(0, reason.find('\n')) + ")";
    GiveUp(message);
    std::throw_with_nested(TransportError(message));
  }
  void CheckUsable() const {
    if (!failure_.empty())
      throw TransportError("MPI transport of rank " + std::to_string(rank_) +
                           ": unusable after an earlier failure: " + failure_);
  }

  // Tests the oldest exchange in flight; when both its halves are complete, pops it and returns
  // true. (MPI_Test on a completed request sets it to MPI_REQUEST_NULL, which tests as done.)
  bool RetireFront() {
    Pending& p = pending_.front();
    int recv_done = 0, send_done = 0;
    CERAR_MPI_CHECK(MPI_Test(&p.req[0], &recv_done, MPI_STATUS_IGNORE));
    CERAR_MPI_CHECK(MPI_Test(&p.req[1], &send_done, MPI_STATUS_IGNORE));
    if (!(recv_done && send_done)) return false;
    pending_.pop_front();
    ++completed_;
    return true;
  }
  struct Pending {
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::size_t bytes = 0;
  };
  int next() const { return (rank_ + 1) % size_; }
  int prev() const { return (rank_ + size_ - 1) % size_; }
  Clock::time_point Deadline() const {
    return detail::DeadlineAfter(Clock::now(), options_.timeout_s);
  }
  std::string Seconds() const {
    std::ostringstream s;
    s << options_.timeout_s << " s";
    return s.str();
  }

  MpiTransportOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::deque<Pending> pending_;
  Handle next_handle_ = 0, completed_ = 0;
  std::uint64_t bytes_sent_ = 0;
  std::string failure_;  // the first failure's message; then every call throws
  Clock::time_point next_interrupt_check_{};  // the first poll checks at once
};

}  // namespace

std::unique_ptr<Transport> CreateMpiTransport(MPI_Comm comm, MpiTransportOptions options) {
  return std::make_unique<MpiTransport>(comm, options);
}

void AbortOnError(const std::exception& error, int code) {
  int rank = -1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "cerar: [rank %d] %s\n", rank, error.what());
  std::fflush(stderr);
  // Peers that time out at about the same moment get a second to print their own view (the
  // successor of a dead rank names it) before MPI_Abort ends every process.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace cerar
