// A launch with the wrong number of kernel arguments fails at the launch line.
#include <cuda_runtime.h>

__global__ void saxpy(float a, const float* x, float* y, int n) {}

void run(const float* x, float* y) {
    int n = 1024;
    saxpy<<<(n + 255) / 256,  // EXPECT-ERROR
            256>>>(2.0f, x, y);
}
