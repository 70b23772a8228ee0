// Prints which sandbox protections hold on this machine, as the judges will apply them (same
// environment): `wb_sandbox_probe` -> {"held": "...", "missing": "..."}. The runner shows it
// in the header of the check table.
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include "sandbox.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return 0;
  prctl(PR_SET_DUMPABLE, 0);  // as the judge is, so the probe meets what the judges meet
  char self[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 2;
  const wb::remote::Spawned s = wb::remote::spawn_worker(std::string(self, static_cast<std::size_t>(n)), {"--child"}, fds[1]);
  close(fds[1]);
  int status = 0;
  if (s.pid > 0) waitpid(s.pid, &status, 0);
  std::printf("{\"held\": \"%s\", \"missing\": \"%s\", \"error\": \"%s\"}\n",
              wb::remote::describe_protections(s.protections).c_str(),
              wb::remote::missing_protections(s.protections).c_str(), s.error.c_str());
  return s.error.empty() ? 0 : 1;
}
