#pragma once
// GoogleTest main for MPI test programs: MPI_Init, the tests on every rank, MPI_Finalize. Only
// rank 0 prints the GoogleTest report; every rank's failures still set the exit status.
#include <gtest/gtest.h>
#include <mpi.h>

inline int RunMpiTests(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && global != local) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return global;
}
