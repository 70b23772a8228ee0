// Benchmarks that run themselves under mpirun: started plainly, the program launches one
// mpirun per rank count with its own argv; started under mpirun, it does the measuring.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

/// True inside an MPI job (Open MPI, MPICH or PMIx launchers).
inline bool under_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

/// Runs argv[0..argc) under mpirun with n ranks (more ranks than cores allowed); returns its
/// exit status.
inline int launch(int n, char** argv, int argc) {
  std::vector<std::string> args = {"mpirun", "-n", std::to_string(n), "--oversubscribe"};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    execvp("mpirun", cargv.data());
    std::fprintf(stderr, "%s:%d: cannot run mpirun: %s (install openmpi-bin)\n", __FILE__, __LINE__,
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/// "1,2,4" -> {1, 2, 4}.
inline std::vector<int> parse_ranks(const std::string& list) {
  std::vector<int> out;
  for (std::size_t p = 0; p < list.size();) {
    const std::size_t q = list.find(',', p);
    out.push_back(std::atoi(list.substr(p, q == std::string::npos ? std::string::npos : q - p).c_str()));
    p = q == std::string::npos ? list.size() : q + 1;
  }
  return out;
}

}  // namespace bench
