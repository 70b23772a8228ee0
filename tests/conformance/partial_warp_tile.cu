// A block whose thread count is not a multiple of 32 (120: warps of 32, 32, 32 and 24 threads) scans
// with 32-thread tiles, as shfl_scan's integral image does: cooperative groups pass the full mask
// 0xffffffff in every tile, the last warp's included, and the 8 lanes that do not exist take no
// part (CUDA waits for the non-exited threads of a mask). A raw __shfl_up_sync and a ballot with the
// full mask behave the same way.
#include <cooperative_groups.h>
#include <cstdio>

namespace cg = cooperative_groups;

constexpr int kThreads = 120;

__global__ void tile_scan(const int* in, int* scan, unsigned* ballots, int* raw) {
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    const unsigned lane = tile.thread_rank();
    int sum = in[threadIdx.x];
    for (unsigned d = 1; d < 32; d *= 2) {
        const int n = tile.shfl_up(sum, d);
        if (lane >= d) sum += n;
    }
    scan[threadIdx.x] = sum;
    const unsigned ballot = tile.ballot(in[threadIdx.x] % 3 == 0);
    if (lane == 0) ballots[threadIdx.x / 32] = ballot;
    raw[threadIdx.x] = __shfl_up_sync(0xffffffffu, static_cast<int>(threadIdx.x), 2);
}

int main() {
    int h[kThreads];
    for (int i = 0; i < kThreads; ++i) h[i] = (7 * i) % 11;
    int *in, *scan, *raw;
    unsigned* ballots;
    cudaMalloc(&in, sizeof h);
    cudaMalloc(&scan, sizeof h);
    cudaMalloc(&raw, sizeof h);
    cudaMalloc(&ballots, 4 * sizeof(unsigned));
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    tile_scan<<<1, kThreads>>>(in, scan, ballots, raw);
    printf("launch: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int s[kThreads], r[kThreads];
    unsigned b[4];
    cudaMemcpy(s, scan, sizeof s, cudaMemcpyDeviceToHost);
    cudaMemcpy(r, raw, sizeof r, cudaMemcpyDeviceToHost);
    cudaMemcpy(b, ballots, sizeof b, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < kThreads; ++i) {
        int expect = 0;
        for (int j = i - i % 32; j <= i; ++j) expect += h[j];  // inclusive scan within the warp
        const int raw_expect = i % 32 >= 2 ? i - 2 : i;        // lanes 0 and 1 keep their own value
        if (s[i] != expect || r[i] != raw_expect) ++wrong;
    }
    printf("wrong elements: %d of %d\n", wrong, kThreads);
    printf("last lane of each warp: %d %d %d %d\n", s[31], s[63], s[95], s[119]);
    printf("ballots (in %% 3 == 0): %08x %08x %08x %08x\n", b[0], b[1], b[2], b[3]);
    cudaFree(in);
    cudaFree(scan);
    cudaFree(raw);
    cudaFree(ballots);
    return 0;
}
