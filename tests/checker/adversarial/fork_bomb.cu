// Attack (fork_bomb): saxpy() forks in a loop, `while (fork() >= 0) {}`: every child forks too,
// until fork fails; then all of them return (and go on serving the channel).
// Must happen: the process limit stops the bomb, the checks fail or are contained, the run ends
// well within its time limits and no process of the attack is left afterwards.
// Safety: it refuses to start (and says so) where no process limit would stop it.
#include "saxpy.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

cudaError_t saxpy(int, float, const float*, float*) {
  rlimit limit{};
  if (geteuid() == 0 || getrlimit(RLIMIT_NPROC, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    std::fprintf(stderr, "ADV: no process limit holds here (euid %d); not forking\n", static_cast<int>(geteuid()));
    return cudaSuccess;
  }
  int forks = 0;
  while (fork() >= 0) ++forks;
  std::fprintf(stderr, "ADV: pid %d forked %d times\n", static_cast<int>(getpid()), forks);
  return cudaSuccess;
}
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
