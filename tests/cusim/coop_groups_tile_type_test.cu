// Statically sized tiles spelled with their type, as the CUDA programming guide writes them:
//   cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
// and passed by value or reference to __device__ functions taking thread_block_tile<N>.
// CUDA's tiled_partition<N>(parent) returns a tile type that converts to
// thread_block_tile<N>; this file is built by its ctest entry, so a compile error here fails
// that test without breaking the rest of the build.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <vector>

#include "cusim_test.h"

namespace cg = cooperative_groups;
using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

__device__ int tile_sum(cg::thread_block_tile<32> warp, int v) {
    for (unsigned d = warp.size() / 2; d > 0; d /= 2) v += warp.shfl_down(v, d);
    return v;
}

__device__ int tile_max(const cg::thread_block_tile<8>& tile, int v) {
    for (unsigned m = 1; m < tile.size(); m *= 2) v = max(v, tile.shfl_xor(v, m));
    return v;
}

__global__ void typed_tiles(int* sums, int* maxima) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eighth = cg::tiled_partition<8>(block);
    const int v = static_cast<int>(block.thread_rank());
    const int s = tile_sum(warp, v);
    if (warp.thread_rank() == 0) sums[warp.meta_group_rank()] = s;
    const int m = tile_max(eighth, (v * 37) % 101);
    if (eighth.thread_rank() == 0) maxima[eighth.meta_group_rank()] = m;
}

TEST(CooperativeGroupsTypes, ThreadBlockTileSpelledOut) {
    constexpr int n = 128;
    DeviceBuffer<int> sums(n / 32), maxima(n / 8);
    ASSERT_CUDA_OK(sums.status());
    ASSERT_CUDA_OK(maxima.status());
    typed_tiles<<<1, n>>>(sums.get(), maxima.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto hs = sums.download();
    const auto hm = maxima.download();
    ASSERT_EQ(hs.size(), size_t(n / 32));
    ASSERT_EQ(hm.size(), size_t(n / 8));
    for (int w = 0; w < n / 32; ++w) {
        int expect = 0;
        for (int k = 32 * w; k < 32 * w + 32; ++k) expect += k;
        EXPECT_EQ(hs[w], expect) << "warp " << w;
    }
    for (int g = 0; g < n / 8; ++g) {
        int expect = 0;
        for (int k = 8 * g; k < 8 * g + 8; ++k) expect = std::max(expect, (k * 37) % 101);
        EXPECT_EQ(hm[g], expect) << "tile " << g;
    }
}
