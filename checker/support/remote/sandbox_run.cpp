// wb_sandbox_run PROGRAM [ARGS...]: runs PROGRAM inside the sandbox of sandbox.h and exits as it
// did (128 + the signal that ended it). checker/mpi_launch.py starts the collective labs'
// worker job with it: mpirun and every rank of the lab's code inside one sandbox.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "sandbox.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: wb_sandbox_run PROGRAM [ARGS...] (PROGRAM: an absolute path)\n");
    return 2;
  }
  // When the launcher goes, so does everything started here (the sandbox's processes die with
  // this one).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::vector<std::string> args(argv + 2, argv + argc);
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  const wb::remote::Spawned s = wb::remote::spawn_worker(argv[1], args, null_fd);
  if (!s.error.empty() || s.pid < 0) {
    std::fprintf(stderr, "wb_sandbox_run: %s\n", s.error.empty() ? "could not start" : s.error.c_str());
    return 127;
  }
  std::fprintf(stderr, "wb_sandbox_run: protections: %s\n", wb::remote::describe_protections(s.protections).c_str());
  int status = 0;
  while (waitpid(s.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
