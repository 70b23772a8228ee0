// Attack (endless_print): saxpy() prints to stdout and stderr forever.
// Must happen: the runner stops the check long before its time limit, with a message that
// says it "printed more than" the allowed output.
#include "saxpy.h"

#include <unistd.h>

#include <cstring>

cudaError_t saxpy(int, float, const float*, float*) {
  const char line[] = "ADV: endless output, endless output, endless output, endless output, endless output\n";
  for (;;) {
    (void)!write(1, line, std::strlen(line));
    (void)!write(2, line, std::strlen(line));
  }
}
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
