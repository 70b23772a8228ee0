// Cooperative groups: thread_block (sync, thread_rank, size), statically sized tiles
// (tiled_partition<16>/<32>: thread_rank, meta_group_rank, shfl, shfl_down, shfl_xor, ballot,
// any, all, sync) and dynamically sized tiles (tiled_partition(block, n): thread_rank, size,
// sync, the members CUDA's thread_group offers).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <vector>

#include "cusim_test.h"

namespace cg = cooperative_groups;
using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

// A 2D block: thread_rank is x-fastest, size is the thread count, and block.sync() orders the
// shared-memory exchange (each thread reads the entry of the thread ranked after it).
__global__ void block_group(int* out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ int ranks[1024];
    const int rank = static_cast<int>(block.thread_rank());
    ranks[rank] = rank * 3;
    block.sync();
    const int size = static_cast<int>(block.size());
    out[3 * rank + 0] = rank;
    out[3 * rank + 1] = size;
    out[3 * rank + 2] = ranks[(rank + 1) % size];
    cg::sync(block);
}

TEST(CooperativeGroups, ThreadBlockRankSizeSync) {
    const dim3 block(16, 6, 2);
    const int n = 16 * 6 * 2;
    DeviceBuffer<int> d(3 * n);
    ASSERT_CUDA_OK(d.status());
    block_group<<<1, block>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(3 * n));
    for (int rank = 0; rank < n; ++rank) {
        EXPECT_EQ(h[3 * rank + 0], rank);
        EXPECT_EQ(h[3 * rank + 1], n);
        EXPECT_EQ(h[3 * rank + 2], ((rank + 1) % n) * 3) << "rank " << rank;
    }
}

// Per thread: tile rank, meta-group rank, tile sum by shfl_down (valid in rank 0), tile
// all-reduce by shfl_xor, broadcast from rank 1 by shfl, tile-relative ballot, any, all.
template <unsigned TileSize>
__global__ void static_tiles(int* out) {
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<TileSize>(block);  // (spelled-out tile types: coop_groups_tile_type_test.cu)
    const int t = static_cast<int>(block.thread_rank());
    const int v = t + 1;
    int down = v;
    for (unsigned d = TileSize / 2; d > 0; d /= 2) down += tile.shfl_down(down, d);
    int all = v;
    for (unsigned m = TileSize / 2; m > 0; m /= 2) all += tile.shfl_xor(all, m);
    int* row = out + 8 * t;
    row[0] = static_cast<int>(tile.thread_rank());
    row[1] = static_cast<int>(tile.meta_group_rank());
    row[2] = tile.thread_rank() == 0 ? down : -1;
    row[3] = all;
    row[4] = tile.shfl(v, 1);
    row[5] = static_cast<int>(tile.ballot(tile.thread_rank() % 4 == 1));
    row[6] = tile.any(t == 5);
    row[7] = tile.all(t != 40);
    tile.sync();
}

template <unsigned TileSize>
static void check_static_tiles(const std::vector<int>& h, int n) {
    ASSERT_EQ(h.size(), size_t(8 * n));
    unsigned ballot = 0;
    for (unsigned r = 0; r < TileSize; ++r)
        if (r % 4 == 1) ballot |= 1u << r;
    for (int t = 0; t < n; ++t) {
        SCOPED_TRACE(::testing::Message() << "tile size " << TileSize << " thread " << t);
        const int first = t / TileSize * TileSize;
        int tile_sum = 0;
        for (int k = first; k < first + static_cast<int>(TileSize); ++k) tile_sum += k + 1;
        const int* row = &h[8 * t];
        EXPECT_EQ(row[0], t % static_cast<int>(TileSize));
        EXPECT_EQ(row[1], t / static_cast<int>(TileSize));
        EXPECT_EQ(row[2], t == first ? tile_sum : -1);
        EXPECT_EQ(row[3], tile_sum);
        EXPECT_EQ(row[4], first + 2);
        EXPECT_EQ(static_cast<unsigned>(row[5]), ballot);
        EXPECT_EQ(row[6], (5 >= first && 5 < first + static_cast<int>(TileSize)) ? 1 : 0);
        EXPECT_EQ(row[7], (40 >= first && 40 < first + static_cast<int>(TileSize)) ? 0 : 1);
        if (testing::Test::HasFailure()) return;
    }
}

TEST(CooperativeGroups, TiledPartition16) {
    constexpr int n = 128;
    DeviceBuffer<int> d(8 * n);
    ASSERT_CUDA_OK(d.status());
    static_tiles<16><<<1, n>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    check_static_tiles<16>(download_ok(d), n);
}

TEST(CooperativeGroups, TiledPartition32) {
    constexpr int n = 96;
    DeviceBuffer<int> d(8 * n);
    ASSERT_CUDA_OK(d.status());
    static_tiles<32><<<2, n>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    check_static_tiles<32>(download_ok(d), n);
}

// Tile-level sum through shared memory ordered by tile.sync(): rank 0 of each tile reads what
// the other ranks wrote.
template <unsigned TileSize>
__global__ void tile_sync_sum(int* out) {
    __shared__ int slot[256];
    auto tile = cg::tiled_partition<TileSize>(cg::this_thread_block());
    const unsigned t = threadIdx.x;
    slot[t] = static_cast<int>(t) * 2;
    tile.sync();
    if (tile.thread_rank() == 0) {
        int s = 0;
        for (unsigned k = 0; k < TileSize; ++k) s += slot[t + k];
        out[tile.meta_group_rank()] = s;
    }
}

TEST(CooperativeGroups, TileSyncOrdersSharedMemory) {
    DeviceBuffer<int> d(16);
    ASSERT_CUDA_OK(d.status());
    tile_sync_sum<16><<<1, 256>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 16u);
    for (int g = 0; g < 16; ++g) {
        int expect = 0;
        for (int k = 0; k < 16; ++k) expect += (g * 16 + k) * 2;
        EXPECT_EQ(h[g], expect) << "tile " << g;
    }
}

// Dynamically sized tiles: rank and size, and tile.sync() ordering a shared-memory exchange.
__global__ void dynamic_tiles(int* out, unsigned tile_size) {
    __shared__ int slot[256];
    cg::thread_group tile = cg::tiled_partition(cg::this_thread_block(), tile_size);
    const unsigned t = threadIdx.x;
    const unsigned rank = static_cast<unsigned>(tile.thread_rank());
    const unsigned size = static_cast<unsigned>(tile.size());
    slot[t] = static_cast<int>(t) + 100;
    tile.sync();
    const unsigned first = t - rank;
    out[3 * t + 0] = static_cast<int>(rank);
    out[3 * t + 1] = static_cast<int>(size);
    out[3 * t + 2] = slot[first + (rank + 1) % size];
}

TEST(CooperativeGroups, DynamicTiledPartition) {
    constexpr int n = 128;
    DeviceBuffer<int> d(3 * n);
    ASSERT_CUDA_OK(d.status());
    for (unsigned size : {4u, 8u, 32u}) {
        SCOPED_TRACE(::testing::Message() << "tile size " << size);
        dynamic_tiles<<<2, n>>>(d.get(), size);
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto h = download_ok(d);
        ASSERT_EQ(h.size(), size_t(3 * n));
        for (int t = 0; t < n; ++t) {
            const int rank = t % static_cast<int>(size), first = t - rank;
            EXPECT_EQ(h[3 * t + 0], rank) << "thread " << t;
            EXPECT_EQ(h[3 * t + 1], static_cast<int>(size)) << "thread " << t;
            EXPECT_EQ(h[3 * t + 2], first + (rank + 1) % static_cast<int>(size) + 100) << "thread " << t;
        }
    }
}
