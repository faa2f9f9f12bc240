// A rank that dies mid-run (the test of "an error, never a hang"), run under mpiexec by ctest:
//   dead_rank hang TIMEOUT_S : rank 1 stops communicating (sleeps); its successor must report
//                              "rank 2: no data from rank 1 for TIMEOUT_S s" and MPI_Abort the job.
//   dead_rank exit TIMEOUT_S : rank 1 exits without MPI_Finalize; either the launcher ends the
//                              job or the successor's timeout does — never a hang.
//   dead_rank late TIMEOUT_S : rank 1 is 3 TIMEOUT_S late for a run, so both ranks fail; each
//                              drops its engines, makes a new transport and engines, and runs
//                              again. Receives the failed run had posted into the dropped engines'
//                              buffers must not land in freed memory (each rank prints "rank R:
//                              recovered, memory intact" and exits without MPI_Finalize, which
//                              could wait on the failed requests).
// ctest gives the command a TIMEOUT and matches the message.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cerar/errors.h"
#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/mpi_transport.h"
#include "test_designs.h"

namespace {

// Both engines fail (rank 1 is late), are dropped, and the ranks start over on a new transport.
[[noreturn]] void LateThenRecover(double timeout) {
  cerar::MpiTransportOptions o;
  o.timeout_s = timeout;
  const std::size_t n = 1 << 20;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    auto tr = cerar::CreateMpiTransport(MPI_COMM_WORLD, o);
    const cerar::Design d = cerar::test::RandomDesign(tr->size(), 4, 4);
    auto be = cerar::CreateCpuBackend();
    std::vector<float> buf(n, 1.0f);
    // The good runs below share the short timeout: start them together, so that only rank 1's
    // sleep, never a slow start under load, can exceed it.
    MPI_Barrier(MPI_COMM_WORLD);
    cerar::CodedAllReduce coded(d, *tr, *be, n);
    cerar::RingAllReduce ring(*tr, n);
    coded.Run(buf.data());
    ring.Run(buf.data());
    if (rank == 1) std::this_thread::sleep_for(std::chrono::duration<double>(3 * timeout));
    for (int k = 0; k < 2; ++k) {
      try {
        k == 0 ? coded.Run(buf.data()) : ring.Run(buf.data());
        std::printf("rank %d: run %d did not fail\n", rank, k);
      } catch (const cerar::TransportError& e) {
        std::printf("rank %d: run %d failed: %s\n", rank, k, e.what());
      }
    }
    // The engines are dropped here with receives still posted into their buffers; the failed
    // transport is kept (its communicator holds those requests).
    tr.release();
  }
  std::vector<std::vector<float>> junk(16, std::vector<float>(n / 4, 7.0f));
  auto tr = cerar::CreateMpiTransport(MPI_COMM_WORLD, o);
  std::vector<float> buf(64, 1.0f);
  cerar::RingAllReduce(*tr, buf.size()).Run(buf.data());
  std::this_thread::sleep_for(std::chrono::duration<double>(timeout));
  bool intact = buf[0] == float(tr->size());
  for (const auto& j : junk)
    for (float v : j) intact = intact && v == 7.0f;
  std::printf("rank %d: recovered, memory %s\n", rank, intact ? "intact" : "CORRUPTED");
  std::fflush(stdout);
  std::_Exit(intact ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "hang";
  const double timeout = argc > 2 ? std::atof(argv[2]) : 3.0;
  if (mode == "late") LateThenRecover(timeout);
  try {
    cerar::MpiTransportOptions o;
    o.timeout_s = timeout;
    auto tr = cerar::CreateMpiTransport(MPI_COMM_WORLD, o);
    const int N = tr->size();
    const cerar::Design d = cerar::test::RandomDesign(N, N + 2, 4);
    auto be = cerar::CreateCpuBackend();
    cerar::AllReduceOptions ao;
    ao.segment_bytes = 4096;
    std::vector<float> buf(200000, 1.0f);
    cerar::CodedAllReduce ar(d, *tr, *be, buf.size(), ao);
    ar.Run(buf.data());  // one good run first
    if (tr->rank() == 1) {
      if (mode == "exit") std::_Exit(3);
      std::this_thread::sleep_for(std::chrono::seconds(600));  // stuck: never sends again
    }
    ar.Run(buf.data());
    std::printf("rank %d: finished without noticing the dead rank\n", tr->rank());
  } catch (const std::exception& e) {
    cerar::AbortOnError(e, 2);
  }
  MPI_Finalize();
  return 1;  // reaching here means the dead rank went unnoticed
}
