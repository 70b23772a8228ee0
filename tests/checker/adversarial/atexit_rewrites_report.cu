// Attack (atexit_rewrites_report): an atexit handler and a static object's destructor write a
// passing report (as forged_report.cu) when the process ends, after GoogleTest wrote the real
// one; the lab functions return cudaSuccess without computing anything.
// Must happen: they run in the worker, whose end changes nothing; every check FAILS, score 0.
#include "saxpy.h"

#include <cstdlib>

#include "adversarial.h"

namespace {
struct RewriteAtExit {
  RewriteAtExit() {
    std::atexit([] { adv::forge_reports("atexit handler"); });
  }
  ~RewriteAtExit() { adv::forge_reports("static destructor"); }
} rewrite;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { return cudaSuccess; }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
