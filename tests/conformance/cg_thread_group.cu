// thread_block and tiles convert to thread_group; dynamic tiled_partition; a device function
// written against the generic group type.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__device__ int sum_over_group(cg::thread_group g, int* scratch, int v) {
    const unsigned r = g.thread_rank();
    scratch[r] = v;
    g.sync();
    for (unsigned s = g.size() / 2; s > 0; s /= 2) {
        if (r < s) scratch[r] += scratch[r + s];
        g.sync();
    }
    const int total = scratch[0];
    g.sync();
    return total;
}

__global__ void groups(int* out) {
    __shared__ int block_scratch[128];
    __shared__ int tile_scratch[128];
    cg::thread_block block = cg::this_thread_block();
    const int v = static_cast<int>(block.thread_rank()) + 1;
    const int block_sum = sum_over_group(block, block_scratch, v);
    cg::thread_group tile8 = cg::tiled_partition(block, 8);
    const unsigned base = block.thread_rank() - tile8.thread_rank();
    const int tile_sum = sum_over_group(tile8, tile_scratch + base, v);
    cg::thread_block_tile<4> tile4 = cg::tiled_partition<4>(block);
    cg::thread_group as_group = tile4;
    out[block.thread_rank()] = block_sum * 10000 + tile_sum * 10 + static_cast<int>(as_group.size());
}

int main() {
    int* d;
    cudaMalloc(&d, 128 * sizeof(int));
    groups<<<1, 128>>>(d);
    int h[128];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int t = 0; t < 128; ++t) {
        const int first = t / 8 * 8 + 1;
        wrong += h[t] != 8256 * 10000 + (8 * first + 28) * 10 + 4;
    }
    printf("thread 0: %d\nthread 127: %d\n%d wrong\n", h[0], h[127], wrong);
    return wrong == 0 ? 0 : 1;
}
