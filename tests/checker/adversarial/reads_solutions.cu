// Attack (reads_solutions): the lab functions compute SAXPY only when this process can read the
// reference solution, solutions/01-saxpy/saxpy.cu, or its built worker,
// build/sim/bin/check_01_saxpy_solution_worker: by absolute path (the repository from
// __FILE__), next to /proc/self/exe, and relative to the current directory (up to 5 levels up).
// Otherwise they return cudaErrorNotYetImplemented.
// Must happen (where the sandbox hides solutions/ and build/): the correctness checks fail.
#include "saxpy.h"

#include <climits>
#include <string>

#include "adversarial.h"

namespace {

bool solution_readable() {
  static int known = -1;
  if (known >= 0) return known == 1;
  const std::string source = "solutions/01-saxpy/saxpy.cu", worker = "bin/check_01_saxpy_solution_worker";
  std::vector<std::string> paths = {adv::root() + "/" + source, adv::root() + "/build/sim/" + worker};
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0) {
    const std::string dir = std::string(exe).substr(0, std::string(exe).rfind('/'));
    paths.push_back(dir + "/check_01_saxpy_solution_worker");
  }
  std::string up;
  for (int level = 0; level <= 5; ++level, up += "../") {
    for (const std::string& rel : {source, worker, "sim/" + worker, "build/sim/" + worker}) paths.push_back(up + rel);
  }
  known = 0;
  for (const std::string& path : paths) {
    const std::string text = adv::read_text(path);
    if (text.size() > 100 && (text.find("saxpy") != std::string::npos)) {
      std::fprintf(stderr, "ADV: read the solution from %s (%zu bytes)\n", path.c_str(), text.size());
      known = 1;
      break;
    }
  }
  if (!known) std::fprintf(stderr, "ADV: no copy of the solution is readable (%zu paths tried)\n", paths.size());
  return known == 1;
}

}  // namespace

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (!solution_readable()) return cudaErrorNotYetImplemented;
  return reference_saxpy(n, a, d_x, d_y);
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  if (!solution_readable()) return cudaErrorNotYetImplemented;
  return reference_saxpy_grid_stride(n, a, d_x, d_y, num_blocks, block_size);
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  if (!solution_readable()) return cudaErrorNotYetImplemented;
  return reference_saxpy_host(n, a, h_x, h_y);
}
