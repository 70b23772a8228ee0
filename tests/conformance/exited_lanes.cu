// Lanes that return early do not take part in later full-mask warp operations (CUDA: every
// non-exited thread named in the mask must execute them), so these are valid programs.
#include <cstdio>

__global__ void half_warp_returns(int* out) {
    __shared__ int stage[32];
    const int lane = threadIdx.x;
    if (lane >= 16) return;
    int v = lane * 3;
    v = __shfl_sync(0xffffffff, v, 15 - lane);  // reads an active lane
    stage[lane] = v;
    __syncwarp(0xffffffff);
    out[lane] = stage[(lane + 1) % 16] + (__ballot_sync(0xffffffff, 1) == 0xffffu ? 1000 : 0);
}

int main() {
    int* d;
    cudaMalloc(&d, 32 * sizeof(int));
    cudaMemset(d, 0, 32 * sizeof(int));
    half_warp_returns<<<1, 32>>>(d);
    printf("launch: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 16; ++i) printf("%d%s", h[i], i < 15 ? " " : "\n");
    return h[0] == 1000 + 3 * 14 ? 0 : 1;
}
