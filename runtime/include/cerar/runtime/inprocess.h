#pragma once
// In-process transport: N ranks as threads of one process, for tests and `cerar simulate`.
//
// Each directed link rank -> rank+1 is a FIFO of messages. StartExchange copies the outgoing
// bytes into a message at once (so a send never refers to the sender's memory afterwards) and
// posts the receive; the receiving rank copies messages into its own posted buffers, in order,
// inside its own calls. No thread ever touches another thread's buffers, so a rank that throws
// and frees its memory cannot corrupt a peer. The queue needs no hard bound: the protocol waits
// for round t-1 before sending round t, and a rank can be at most N rounds ahead of its
// successor, so a link holds at most N vectors.
//
// Faults: every wait has a deadline (`timeout_s`) and watches a shared abort flag. RunInProcess
// raises the flag when a rank throws, so its peers fail at once with a message naming it instead
// of waiting; a rank that silently stops makes its successor fail after the timeout with
// "rank 2: no data from rank 1 for 10 s". A rank whose predecessor is itself blocked waiting
// keeps waiting (at most N more timeouts), so the error names the rank that stopped, not a
// starved one; the others are then aborted with that message.
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cerar/runtime/transport.h"

namespace cerar {

struct InProcessOptions {
  double timeout_s = 60;  // longest wait for a peer before TransportError
};

class InProcessWorld {
 public:
  explicit InProcessWorld(int size, InProcessOptions options = {});
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;

  int size() const;
  // The transport of one rank; once per rank (a second call for the same rank throws
  // InvalidArgument). It shares the world's state (the world may be destroyed first).
  std::unique_ptr<Transport> MakeTransport(int rank);
  // Makes every pending and future wait of every rank throw TransportError naming `rank`.
  void Abort(int rank, const std::string& reason);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// Runs body(transport) on `size` threads, one per rank. When a rank throws, the world is
// aborted so the others fail quickly. Returns one exception_ptr per rank (null = success).
// When a thread cannot be started, the ranks already running are aborted and joined, and
// TransportError "in-process transport: cannot start the thread of rank r of N (...)" is thrown.
std::vector<std::exception_ptr> RunInProcess(int size,
                                             const std::function<void(Transport&)>& body,
                                             InProcessOptions options = {});

// The message of an exception_ptr ("" for null).
std::string ExceptionMessage(const std::exception_ptr& e);

}  // namespace cerar
