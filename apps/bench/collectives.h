#pragma once
// The bench's own collectives, none of which can hang (issue: a rank that stalls, or ranks given
// different arguments, must end the job with a message instead of a hang).
//
// Every collective the bench itself calls - the argument check, the barrier before a timed run,
// the max of the times, the error reduction, the communicator duplicates - is nonblocking
// (MPI_Ibarrier, MPI_Iallreduce, MPI_Iallgather, MPI_Comm_idup) and polled with MPI_Test against
// one deadline; past it, TransportError("rank 2: not every rank reached <what> within 60 s").
// The measured baseline MPI_Allreduce must stay the blocking call (its nonblocking twin uses
// other algorithms), so a Watchdog thread bounds it instead: past the deadline it prints the
// one-line error and ends the process with _Exit(2), and mpiexec ends the rest of the job.
#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cerar::bench {

class Collectives {
 public:
  // Duplicates `comm` (polled) and sets MPI_ERRORS_RETURN on the copy.
  Collectives(MPI_Comm comm, double timeout_s);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_s() const { return timeout_s_; }

  void Barrier(const std::string& what);
  double Max(double v, const std::string& what);
  double Sum(double v, const std::string& what);
  std::vector<std::uint64_t> AllGather(const std::vector<std::uint64_t>& mine,
                                       const std::string& what);
  // A duplicate of MPI_COMM_WORLD made while the Open MPI control variable
  // coll_tuned_allreduce_algorithm is `algorithm` (MPI_T), so MPI_Allreduce on it runs that
  // algorithm (4 = ring). Needs coll_tuned_use_dynamic_rules = 1 at launch (the variable is
  // read-only at run time): throws InvalidArgument saying so otherwise. Free with MPI_Comm_free.
  MPI_Comm ForcedAllreduceComm(int algorithm, const std::string& name);
  // The ranks that share this rank's node (MPI_COMM_TYPE_SHARED), this rank's place among them,
  // and the least of their `value`s, so that they all decide on one figure (MemAvailable, read
  // by each at a different moment). Collective.
  struct Node {
    int ranks = 1, rank = 0;
    double min_value = 0;
  };
  Node ThisNode(double value);

 private:
  void Poll(MPI_Request& request, const std::string& what);
  double Reduce(double v, MPI_Op op, const std::string& what);  // one double, under the deadline
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_s_;
};

// Arms a deadline around a blocking call (the measured MPI_Allreduce).
class Watchdog {
 public:
  Watchdog(int rank, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void Arm(const std::string& what);
  void Disarm();

 private:
  void Loop();
  int rank_;
  double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  std::uint64_t generation_ = 0;
  std::string what_;
  std::thread thread_;
};

}  // namespace cerar::bench
