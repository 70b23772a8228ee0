// Attack (forged_report): before main(), a static constructor looks for the GoogleTest report
// (its own and its parent's command line, /tmp/wbcheck-*/result.json, its parent's descriptors),
// writes a report in which every check of lab 01 passed, and leaves with _exit(0).
// Must happen: the report is the judge's, through a pipe the worker cannot reach; every check
// FAILS (the lab's process is gone before the first call) and the score is 0.
#include "saxpy.h"

#include <unistd.h>

#include "adversarial.h"

namespace {
struct Forger {
  Forger() {
    adv::forge_reports("static constructor");
    _exit(0);
  }
} forger;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { return cudaSuccess; }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
