// Attack (destructor_sleeps): a correct SAXPY (the reference solution, adversarial.h) whose
// process will not end: a static destructor sleeps 1000 s and an atexit handler spins forever.
// Must happen: the checks pass as the solution's do (the verdict does not wait for the lab's
// process to end), each check takes a normal time (the judge kills the worker shortly after
// asking it to stop), and no process is left behind.
#include "saxpy.h"

#include "adversarial.h"

#include <unistd.h>

#include <cstdlib>

namespace {
struct SleepsAtExit {
  SleepsAtExit() {
    std::atexit([] {
      static volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    });
  }
  ~SleepsAtExit() { sleep(1000); }
} sleeps_at_exit;

}  // namespace

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  return reference_saxpy(n, a, d_x, d_y);
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  return reference_saxpy_grid_stride(n, a, d_x, d_y, num_blocks, block_size);
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  return reference_saxpy_host(n, a, h_x, h_y);
}
