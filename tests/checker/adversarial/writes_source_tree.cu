// Attack (writes_source_tree): writes into the repository, which the sandbox mounts read-only
// for the worker: a file in the folder WB_ADV_SCRATCH (inside the repository, writable by the
// worker's user), once by its absolute path and once by a path relative to the current
// directory (the runner's, e.g. the repository's root for `./workbook check`). A submission
// that can write there can change the checks' sources or the runner for the next run.
// Must happen: both writes fail.
#include "saxpy.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "adversarial.h"

namespace {
void write_both(const char* who) {
  const char* scratch = std::getenv("WB_ADV_SCRATCH");
  char cwd[PATH_MAX] = {};
  if (!scratch || !getcwd(cwd, sizeof cwd)) return;
  std::string relative = scratch;
  const std::string prefix = std::string(cwd) + "/";
  if (relative.rfind(prefix, 0) == 0) relative = relative.substr(prefix.size());
  for (const auto& [path, name] : {std::pair{std::string(scratch), "absolute"}, std::pair{relative, "relative"}}) {
    const bool ok = adv::write_text(path + "/written-" + name, who, O_CREAT | O_TRUNC);
    std::fprintf(stderr, "ADV: %s: writing %s/written-%s (%s path) %s\n", who, path.c_str(), name, name,
                 ok ? "worked" : std::strerror(errno));
  }
}
struct AtStart {
  AtStart() { write_both("static constructor"); }
} at_start;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { return write_both("saxpy"), cudaSuccess; }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
