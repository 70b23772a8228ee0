// A compile error after a multi-line launch must be reported at its .cu line.
#include <cuda_runtime.h>

__global__ void scale(float* data, int n, float factor) {}

void run(float* data) {
    scale<<<dim3(4),
            dim3(64),  // block
            0>>>(data,
                 256,
                 2.0f);
    int after = undeclared_variable;  // EXPECT-ERROR
    (void)after;
}
