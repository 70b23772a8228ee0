// Cooperative groups shuffle values wider than 8 bytes (shfl_scan's integral image shuffles a uint4
// through tile.shfl_xor): a tile's shfl, shfl_up, shfl_down and shfl_xor move any trivially
// copyable type, where the __shfl_*_sync intrinsics stop at 8 bytes.
#include <cooperative_groups.h>
#include <cstdio>

namespace cg = cooperative_groups;

struct Wide {
    double d;
    int i[4];
};

__global__ void shuffle_wide(uint4* out4, Wide* outw) {
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    const unsigned r = tile.thread_rank();
    uint4 v = make_uint4(r, 10 * r, 100 * r, 1000 * r);
    Wide w{0.5 * r, {int(r), -int(r), int(2 * r), int(3 * r)}};
    const uint4 x = tile.shfl_xor(v, 1);
    const uint4 down = tile.shfl_down(v, 3);
    const Wide from0 = tile.shfl(w, 0);
    const Wide up = tile.shfl_up(w, 2);
    out4[r] = make_uint4(x.x, x.w, down.y, down.z);
    outw[r] = Wide{from0.d + up.d, {from0.i[1], up.i[0], up.i[2], up.i[3]}};
}

int main() {
    uint4* out4;
    Wide* outw;
    cudaMalloc(&out4, 32 * sizeof(uint4));
    cudaMalloc(&outw, 32 * sizeof(Wide));
    shuffle_wide<<<1, 32>>>(out4, outw);
    printf("launch: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    uint4 h4[32];
    Wide hw[32];
    cudaMemcpy(h4, out4, sizeof h4, cudaMemcpyDeviceToHost);
    cudaMemcpy(hw, outw, sizeof hw, cudaMemcpyDeviceToHost);
    for (int r : {0, 1, 2, 5, 30, 31}) {
        printf("rank %2d: xor1 (%u, %u) down3 (%u, %u); shfl0 + up2: %.1f, (%d, %d, %d, %d)\n", r, h4[r].x, h4[r].y,
               h4[r].z, h4[r].w, hw[r].d, hw[r].i[0], hw[r].i[1], hw[r].i[2], hw[r].i[3]);
    }
    cudaFree(out4);
    cudaFree(outw);
    return 0;
}
