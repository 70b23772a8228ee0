// cg::reduce over tiles with cg::plus, cg::less and cg::greater.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void tile_stats(const int* in, int* sum32, int* min16, int* max16) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<16> half = cg::tiled_partition<16>(block);
    const int v = in[block.thread_rank()];
    const int s = cg::reduce(warp, v, cg::plus<int>());
    const int lo = cg::reduce(half, v, cg::less<int>());
    const int hi = cg::reduce(half, v, cg::greater<int>());
    if (warp.thread_rank() == 0) sum32[warp.meta_group_rank()] = s;
    if (half.thread_rank() == 0) {
        min16[half.meta_group_rank()] = lo;
        max16[half.meta_group_rank()] = hi;
    }
}

int main() {
    const int n = 64;
    int h[n];
    for (int i = 0; i < n; ++i) h[i] = (i * 37) % 101 - 50;
    int *d, *sum, *mn, *mx;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&sum, 2 * sizeof(int));
    cudaMalloc(&mn, 4 * sizeof(int));
    cudaMalloc(&mx, 4 * sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    tile_stats<<<1, n>>>(d, sum, mn, mx);
    int hs[2], hmn[4], hmx[4];
    cudaMemcpy(hs, sum, sizeof hs, cudaMemcpyDeviceToHost);
    cudaMemcpy(hmn, mn, sizeof hmn, cudaMemcpyDeviceToHost);
    cudaMemcpy(hmx, mx, sizeof hmx, cudaMemcpyDeviceToHost);
    int ok = 1;
    for (int t = 0; t < 4; ++t) {
        int s = 0, lo = 1 << 30, hi = -(1 << 30);
        for (int i = 16 * t; i < 16 * t + 16; ++i) {
            lo = h[i] < lo ? h[i] : lo;
            hi = h[i] > hi ? h[i] : hi;
        }
        for (int i = 32 * (t / 2); i < 32 * (t / 2) + 32; ++i) s += h[i];
        ok &= hmn[t] == lo && hmx[t] == hi && (t % 2 || hs[t / 2] == s);
        printf("tile16 %d: min %d max %d\n", t, hmn[t], hmx[t]);
    }
    printf("warp sums %d %d\n%s\n", hs[0], hs[1], ok ? "OK" : "MISMATCH");
    return ok ? 0 : 1;
}
