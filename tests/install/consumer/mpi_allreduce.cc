// Consumer of cerar::runtime_mpi: the exact ring all-reduce over MPI on every rank's rank number;
// the sum must be N (N - 1) / 2 everywhere. Compiled with a plain C++ compiler (no mpicxx) and
// without libmpi_cxx on purpose: cerar::runtime_mpi carries OMPI_SKIP_MPICXX.
#include <mpi.h>

#include <cerar/runtime/allreduce.h>
#include <cerar/runtime/mpi_transport.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    auto transport = cerar::CreateMpiTransport(MPI_COMM_WORLD);
    const int n = transport->size(), rank = transport->rank();
    std::vector<double> values(1000, double(rank));
    cerar::AllReduceOptions options;
    options.dtype = cerar::DType::kFloat64;
    cerar::RingAllReduce ring(*transport, values.size(), options);
    ring.Run(values.data());
    for (double v : values)
      if (v != n * (n - 1) / 2.0) status = 1;
    if (rank == 0) std::printf("mpi_allreduce: N = %d, %s\n", n, status ? "WRONG" : "ok");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_allreduce: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
