// Attack (exit_mid_check): each lab function forges a passing report (as forged_report.cu) and
// then calls exit(0) in the middle of the check, hoping the check process ends "successfully".
// Must happen: only the worker exits; the judge fails every check and says the lab's process
// stopped ("stopped during saxpy(): it exited with status 0").
#include "saxpy.h"

#include <cstdlib>

#include "adversarial.h"

namespace {
[[noreturn]] void forge_and_exit(const char* who) {
  adv::forge_reports(who);
  std::exit(0);
}
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) { forge_and_exit("saxpy"); }
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { forge_and_exit("saxpy_grid_stride"); }
cudaError_t saxpy_host(int, float, const float*, float*) { forge_and_exit("saxpy_host"); }
