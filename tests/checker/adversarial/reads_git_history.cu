// Attack (reads_git_history): solutions/ is hidden, but the repository's history may hold it.
// The lab functions compute SAXPY only when `git show HEAD:solutions/01-saxpy/saxpy.cu` (run
// from this process, in the repository found from __FILE__, then in a copy of .git made
// through the current directory) prints the solution; otherwise they return
// cudaErrorNotYetImplemented.
// Must happen (where the sandbox hides solutions/): the correctness checks fail, i.e. the
// history is not readable either (or holds no solution, as in a student's copy).
#include "saxpy.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "adversarial.h"

namespace {

bool solution_in_history() {
  static int known = -1;
  if (known >= 0) return known == 1;
  known = 0;
  // The repository by its absolute path; then its .git copied through the current directory
  // (the repository's root when the runner was started there) into /tmp.
  const std::string copy = "/tmp/wb-adv-git-" + std::to_string(getpid());
  const std::string show = " show HEAD:solutions/01-saxpy/saxpy.cu 2>&1";
  for (const std::string& command :
       {"env HOME=/nonexistent git -c safe.directory='*' -C '" + adv::root() + "'" + show,
        "cp -r .git " + copy + " 2>&1 && env HOME=/nonexistent git -c safe.directory='*' --git-dir=" + copy + show}) {
    std::string text;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
      pclose(pipe);
    }
    const bool read = text.find("__global__") != std::string::npos;
    std::fprintf(stderr, "ADV: `%s` %s (%zu bytes): %.100s\n", command.c_str(),
                 read ? "read the solution" : "failed", text.size(), text.c_str());
    if (read) known = 1;
  }
  return known == 1;
}

}  // namespace

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (!solution_in_history()) return cudaErrorNotYetImplemented;
  return reference_saxpy(n, a, d_x, d_y);
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  if (!solution_in_history()) return cudaErrorNotYetImplemented;
  return reference_saxpy_grid_stride(n, a, d_x, d_y, num_blocks, block_size);
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  if (!solution_in_history()) return cudaErrorNotYetImplemented;
  return reference_saxpy_host(n, a, h_x, h_y);
}
