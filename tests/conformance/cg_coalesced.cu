// Warp-aggregated atomics with coalesced_threads(): the lanes inside the branch elect a leader
// that reserves room for all of them with one atomicAdd.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__device__ int atomicAggInc(int* counter) {
    cg::coalesced_group active = cg::coalesced_threads();
    int prev = 0;
    if (active.thread_rank() == 0) prev = atomicAdd(counter, static_cast<int>(active.size()));
    return active.shfl(prev, 0) + static_cast<int>(active.thread_rank());
}

__global__ void filter_odd(const int* in, int* out, int* count, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] % 2 != 0) out[atomicAggInc(count)] = in[i];
}

int main() {
    const int n = 1000;
    int h[n];
    for (int i = 0; i < n; ++i) h[i] = (i * 7) % 13;
    int *d, *out, *count;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&out, sizeof h);
    cudaMalloc(&count, sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(count, 0, sizeof(int));
    filter_odd<<<(n + 255) / 256, 256>>>(d, out, count, n);
    int hc = 0, ho[n];
    cudaMemcpy(&hc, count, sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost);
    int expect = 0, sum = 0, expect_sum = 0;
    for (int i = 0; i < n; ++i)
        if (h[i] % 2) ++expect, expect_sum += h[i];
    for (int i = 0; i < hc; ++i) sum += ho[i];
    printf("kept %d of %d, sum %d\n", hc, n, sum);
    return hc == expect && sum == expect_sum ? 0 : 1;
}
