// A static tile of a tile that is not smaller than its parent (tiled_partition<32> of a 32-thread
// tile): CUDA's cooperative groups refuse it, so nvcc refuses the program, and cusim refuses it
// with the same message. A smaller tile of a tile, tiled_partition<8>(warp), is valid CUDA.
// nvcc: Tile size bigger or equal to the parent group size
// cusim: static assertion failed: Tile size bigger or equal to the parent group size
#include <cooperative_groups.h>

#include <cstdio>

namespace cg = cooperative_groups;

__global__ void ranks(int* out) {
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    auto same = cg::tiled_partition<32>(warp);
    out[threadIdx.x] = static_cast<int>(same.thread_rank());
}

int main() {
    int* out;
    cudaMalloc(&out, 32 * sizeof(int));
    ranks<<<1, 32>>>(out);
    std::printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    return 0;
}
