// NVTX annotations (<nvtx3/nvToolsExt.h>, header-only since CUDA 10) around kernel launches.
#include <cstdio>
#include <nvtx3/nvToolsExt.h>

__global__ void inc(int* v) { v[threadIdx.x] += 1; }

int main() {
    int* d;
    cudaMalloc(&d, 32 * sizeof(int));
    cudaMemset(d, 0, 32 * sizeof(int));
    nvtxRangePushA("outer");
    for (int i = 0; i < 3; ++i) {
        nvtxRangePushA("iteration");
        inc<<<1, 32>>>(d);
        nvtxRangePop();
    }
    nvtxMarkA("done");
    nvtxRangePop();
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("h[0] %d h[31] %d\n", h[0], h[31]);
    return h[31] == 3 ? 0 : 1;
}
