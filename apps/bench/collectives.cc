#include "collectives.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cerar/errors.h"
#include "mpi/mpi_check.h"

namespace cerar::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string Seconds(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

// Reads or writes one int control variable of the MPI library by name (MPI_T).
class IntCvar {
 public:
  explicit IntCvar(const std::string& name) : name_(name) {
    int index = 0, count = 0;
    if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS)
      throw InvalidArgument("the MPI library has no control variable " + name +
                            " (mpi_allreduce_ring needs Open MPI's coll tuned component)");
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count) != MPI_SUCCESS || count != 1)
      throw InvalidArgument("MPI control variable " + name + " cannot be read as one int");
  }
  ~IntCvar() { MPI_T_cvar_handle_free(&handle_); }
  int Read() const {
    int v = 0;
    if (MPI_T_cvar_read(handle_, &v) != MPI_SUCCESS)
      throw InvalidArgument("cannot read MPI control variable " + name_);
    return v;
  }
  void Write(int v) {
    if (MPI_T_cvar_write(handle_, &v) != MPI_SUCCESS)
      throw InvalidArgument("cannot set MPI control variable " + name_ + " to " +
                            std::to_string(v) + " at run time");
  }

 private:
  std::string name_;
  MPI_T_cvar_handle handle_{};
};

}  // namespace

Collectives::Collectives(MPI_Comm comm, double timeout_s) : timeout_s_(timeout_s) {
  // Bounded so that now + timeout cannot overflow the clock (about 9.2e9 s): a benchmark has no
  // use for a wait of months.
  if (!(timeout_s > 0 && timeout_s <= 1e7))
    throw InvalidArgument("--timeout " + std::to_string(timeout_s) +
                          " s, expected 0 < seconds <= 1e7");
  CERAR_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  CERAR_MPI_CHECK(MPI_Comm_size(comm, &size_));
  MPI_Request r;
  CERAR_MPI_CHECK(MPI_Comm_idup(comm, &comm_, &r));
  Poll(r, "the start (MPI_Comm_idup)");
  CERAR_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

Collectives::~Collectives() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Collectives::Poll(MPI_Request& request, const std::string& what) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s_));
  for (int done = 0, spins = 0; !done; ++spins) {
    CERAR_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    if (Clock::now() > deadline)
      throw TransportError("rank " + std::to_string(rank_) + ": not every rank reached " + what +
                           " within " + Seconds(timeout_s_) + " (cerar-bench)");
    if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Collectives::Barrier(const std::string& what) {
  MPI_Request r;
  CERAR_MPI_CHECK(MPI_Ibarrier(comm_, &r));
  Poll(r, what);
}

Collectives::Node Collectives::ThisNode(double value) {
  MPI_Comm node = MPI_COMM_NULL;
  CERAR_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  Node n;
  CERAR_MPI_CHECK(MPI_Comm_size(node, &n.ranks));
  CERAR_MPI_CHECK(MPI_Comm_rank(node, &n.rank));
  CERAR_MPI_CHECK(MPI_Allreduce(&value, &n.min_value, 1, MPI_DOUBLE, MPI_MIN, node));
  CERAR_MPI_CHECK(MPI_Comm_free(&node));
  return n;
}

double Collectives::Max(double v, const std::string& what) { return Reduce(v, MPI_MAX, what); }

double Collectives::Sum(double v, const std::string& what) { return Reduce(v, MPI_SUM, what); }

double Collectives::Reduce(double v, MPI_Op op, const std::string& what) {
  double out = 0;
  MPI_Request r;
  CERAR_MPI_CHECK(MPI_Iallreduce(&v, &out, 1, MPI_DOUBLE, op, comm_, &r));
  Poll(r, what);
  return out;
}

std::vector<std::uint64_t> Collectives::AllGather(const std::vector<std::uint64_t>& mine,
                                                  const std::string& what) {
  std::vector<unsigned long long> in(mine.begin(), mine.end()), out(mine.size() * size_);
  MPI_Request r;
  CERAR_MPI_CHECK(MPI_Iallgather(in.data(), static_cast<int>(in.size()), MPI_UNSIGNED_LONG_LONG,
                                 out.data(), static_cast<int>(in.size()), MPI_UNSIGNED_LONG_LONG,
                                 comm_, &r));
  Poll(r, what);
  return std::vector<std::uint64_t>(out.begin(), out.end());
}

MPI_Comm Collectives::ForcedAllreduceComm(int algorithm, const std::string& name) {
  int provided = 0;
  CERAR_MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  MPI_Comm out = MPI_COMM_NULL;
  try {
    IntCvar dynamic("coll_tuned_use_dynamic_rules");
    if (dynamic.Read() != 1)
      throw InvalidArgument(name + " needs Open MPI's coll_tuned_use_dynamic_rules = 1 at launch "
                            "(mpiexec --mca coll_tuned_use_dynamic_rules 1, or the environment "
                            "variable OMPI_MCA_coll_tuned_use_dynamic_rules=1)");
    IntCvar forced("coll_tuned_allreduce_algorithm");
    const int old = forced.Read();
    forced.Write(algorithm);
    // The tuned component reads the forced algorithm when a communicator is created.
    MPI_Request r;
    CERAR_MPI_CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &out, &r));
    Poll(r, "the communicator of " + name);
    forced.Write(old);
  } catch (...) {
    MPI_T_finalize();
    throw;
  }
  CERAR_MPI_CHECK(MPI_T_finalize());
  return out;
}

Watchdog::Watchdog(int rank, double timeout_s)
    : rank_(rank), timeout_s_(timeout_s), thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::Arm(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    what_ = what;
    ++generation_;
  }
  cv_.notify_all();
}

void Watchdog::Disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = false;
}

void Watchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    const std::uint64_t gen = generation_;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    cv_.wait_until(lock, deadline, [&] { return stop_ || !armed_ || generation_ != gen; });
    if (armed_ && generation_ == gen && !stop_ && Clock::now() >= deadline) {
      // MPI_Abort is not callable from a second thread at MPI_THREAD_SINGLE; exiting without
      // MPI_Finalize makes mpiexec end every other rank of the job.
      std::fprintf(stderr, "cerar: [rank %d] rank %d: %s did not finish within %g s "
                           "(cerar-bench)\n", rank_, rank_, what_.c_str(), timeout_s_);
      std::fflush(stderr);
      std::_Exit(2);
    }
  }
}

}  // namespace cerar::bench
