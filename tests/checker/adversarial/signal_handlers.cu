// Attack (signal_handlers): handlers for SIGTERM, SIGSEGV, SIGBUS, SIGABRT and SIGPIPE forge a
// passing report (as forged_report.cu) and _exit(0); then saxpy() dereferences a null pointer.
// Must happen: the crash and the handlers end only the worker; every check fails, score 0.
#include "saxpy.h"

#include <signal.h>
#include <unistd.h>

#include "adversarial.h"

namespace {
void forge_and_leave(int) {
  adv::forge_reports("signal handler");
  _exit(0);
}

struct InstallHandlers {
  InstallHandlers() {
    for (int sig : {SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGPIPE}) signal(sig, forge_and_leave);
  }
} install_handlers;
}  // namespace

cudaError_t saxpy(int, float, const float*, float*) {
  volatile int* null = nullptr;
  *null = 1;
  return cudaSuccess;
}
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) {
  return saxpy(0, 0, nullptr, nullptr);
}
cudaError_t saxpy_host(int, float, const float*, float*) { return saxpy(0, 0, nullptr, nullptr); }
