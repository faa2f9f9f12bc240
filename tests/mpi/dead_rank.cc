// A rank that dies mid-run (the test of "an error, never a hang"), run under mpiexec by ctest:
//   dead_rank hang TIMEOUT_S : rank 1 stops communicating (sleeps); its successor must report
//                              "rank 2: no data from rank 1 for TIMEOUT_S s" and MPI_Abort the job.
//   dead_rank exit TIMEOUT_S : rank 1 exits without MPI_Finalize; either the launcher ends the
//                              job or the successor's timeout does — never a hang.
// ctest gives the command a TIMEOUT and matches the message.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cerar/runtime/allreduce.h"
#include "cerar/runtime/mpi_transport.h"
#include "test_designs.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "hang";
  const double timeout = argc > 2 ? std::atof(argv[2]) : 3.0;
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
