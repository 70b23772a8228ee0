// cg::inclusive_scan and cg::exclusive_scan over a warp tile: per-warp prefix sums.
#include <cooperative_groups.h>
#include <cooperative_groups/scan.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void warp_prefix(const int* in, int* incl, int* excl) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    incl[i] = cg::inclusive_scan(warp, in[i]);
    const int e = cg::exclusive_scan(warp, in[i], cg::plus<int>());
    excl[i] = warp.thread_rank() == 0 ? 0 : e;  // rank 0's exclusive result is not used
}

int main() {
    const int n = 128;
    int h[n], hi[n], he[n];
    for (int i = 0; i < n; ++i) h[i] = i % 5 + 1;
    int *d, *di, *de;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&di, sizeof h);
    cudaMalloc(&de, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    warp_prefix<<<2, 64>>>(d, di, de);
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(he, de, sizeof he, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0, run = 0; i < n; ++i) {
        if (i % 32 == 0) run = 0;
        wrong += he[i] != run;
        run += h[i];
        wrong += hi[i] != run;
    }
    printf("inclusive: %d %d %d ... %d\n", hi[0], hi[1], hi[2], hi[31]);
    printf("exclusive: %d %d %d ... %d\n", he[32], he[33], he[34], he[63]);
    printf("%d wrong\n", wrong);
    return wrong == 0 ? 0 : 1;
}
