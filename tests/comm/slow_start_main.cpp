// main() of comm_launcher_slow_start: the checks of launcher_targets.cpp, in a program whose ranks
// take long to start, as CUDA contexts do when several ranks share one GPU, to test that
// checker/mpi_launch.py does not count a rank's start against a check's time limit, and that a
// start that never ends is reported as one.
//
// WB_TEST_START_DELAY_S=<seconds>: after MPI_Init and the opening of its status record (state
// "starting", where comm::MpiSession chooses the GPU), a rank sleeps that long before it goes on
// to start as every check binary does (comm::check::run_all_tests). WB_TEST_START_DELAY_RANK=<r>:
// only rank r sleeps (default: every rank); the others wait for it in the communicator's creation.
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "comm/check.h"
#include "comm/status.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // run_all_tests then leaves it as it is
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  comm::status::open(rank);  // what comm::MpiSession does right after MPI_Init: the rank is "starting"
  const char* delay = std::getenv("WB_TEST_START_DELAY_S");
  const char* only = std::getenv("WB_TEST_START_DELAY_RANK");
  if (delay && *delay && (!only || !*only || std::atoi(only) == rank))
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(delay)));
  return comm::check::run_all_tests(argc, argv);
}
