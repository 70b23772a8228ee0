// Tiles of several warps (CUDA 12): cg::block_tile_memory, this_thread_block(scratch) and
// tiled_partition<64..512>, with their sync, meta-group ranks, broadcast shfl, any, all and
// cg::reduce, as NVIDIA's reduction sample (multi_warp_cg_reduce) uses them.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <cstdio>

namespace cg = cooperative_groups;

// Each 64-thread tile of a 256-thread block sums its values with cg::reduce; rank 0 of each tile
// stores the sum, the tile's meta-group rank and size, the value of its rank 5 (broadcast), and
// whether any of its values is odd and whether all are even.
template <unsigned BlockSize, unsigned TileSize>
__global__ void tile_sums(const int* in, int* out) {
    __shared__ cg::block_tile_memory<BlockSize> scratch;
    __shared__ int staged[BlockSize];
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<TileSize>(block);
    const int v = in[blockIdx.x * BlockSize + block.thread_rank()];
    // sync(): every thread of the tile stages its value before any reads a neighbour's.
    staged[block.thread_rank()] = v;
    tile.sync();
    const unsigned base = tile.meta_group_rank() * TileSize;
    const int neighbour = staged[base + (tile.thread_rank() + 1) % TileSize];
    const int sum = cg::reduce(tile, v, cg::plus<int>());
    const int fifth = tile.shfl(v, 5);
    const int any_odd = tile.any(v % 2);
    const int all_even = tile.all(v % 2 == 0);
    const int neighbours = cg::reduce(tile, neighbour, cg::plus<int>());
    if (tile.thread_rank() == 0) {
        int* o = out + (blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()) * 7;
        o[0] = sum;
        o[1] = static_cast<int>(tile.meta_group_rank());
        o[2] = static_cast<int>(tile.meta_group_size());
        o[3] = fifth;
        o[4] = any_odd;
        o[5] = all_even;
        o[6] = neighbours;
    }
}

int main() {
    constexpr int n = 2 * 256;
    int h_in[n];
    for (int i = 0; i < n; ++i) h_in[i] = (i * 7) % 23 * 2 + (i == 300 ? 1 : 0);
    int *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h_in);
    cudaMalloc(&d_out, 2 * 4 * 7 * sizeof(int));
    cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);

    tile_sums<256, 64><<<2, 256>>>(d_in, d_out);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        std::printf("tile_sums<256, 64>: %s\n", cudaGetErrorString(err));
        return 1;
    }
    int h_out[2 * 4 * 7];
    cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
    for (int t = 0; t < 8; ++t) {
        const int* o = h_out + t * 7;
        std::printf("64-thread tile %d: sum %d, meta rank %d of %d, rank 5 holds %d, any odd %d, all even %d, "
                    "neighbour sum %d\n", t, o[0], o[1], o[2], o[3], o[4], o[5], o[6]);
    }

    tile_sums<512, 256><<<1, 512>>>(d_in, d_out);
    err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        std::printf("tile_sums<512, 256>: %s\n", cudaGetErrorString(err));
        return 1;
    }
    cudaMemcpy(h_out, d_out, 2 * 7 * sizeof(int), cudaMemcpyDeviceToHost);
    for (int t = 0; t < 2; ++t) {
        const int* o = h_out + t * 7;
        std::printf("256-thread tile %d: sum %d, meta rank %d of %d, rank 5 holds %d, any odd %d, all even %d, "
                    "neighbour sum %d\n", t, o[0], o[1], o[2], o[3], o[4], o[5], o[6]);
    }
    return 0;
}
