// Warp-level intrinsics: shuffles (all four, full width and width < 32, 4- and 8-byte values),
// votes, __activemask and __syncwarp, in blocks of several warps and in a partial last warp.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

constexpr unsigned kFull = 0xffffffffu;

enum Op { kIdx = 0, kUp = 1, kDown = 2, kXor = 3 };

// Each thread shuffles the value 1000 * warp + lane; `arg` is the source lane, delta or lane mask.
__global__ void shuffle(int* out, int op, int arg, int width) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int v = 1000 * warp + lane;
    int r = -1;
    switch (op) {
        case kIdx: r = __shfl_sync(kFull, v, arg, width); break;
        case kUp: r = __shfl_up_sync(kFull, v, static_cast<unsigned>(arg), width); break;
        case kDown: r = __shfl_down_sync(kFull, v, static_cast<unsigned>(arg), width); break;
        case kXor: r = __shfl_xor_sync(kFull, v, arg, width); break;
    }
    out[threadIdx.x] = r;
}

// CUDA's documented semantics, as a host reference (PTX shfl.sync with c = width segments).
static int expected_shuffle(int op, int lane, int arg, int width) {
    const int base = lane & ~(width - 1);
    switch (op) {
        case kIdx: return base + (arg % width);
        case kUp: return lane - arg >= base ? lane - arg : lane;
        case kDown: return lane + arg < base + width ? lane + arg : lane;
        case kXor: {
            const int src = lane ^ arg;
            return src < base + width ? src : lane;
        }
    }
    return -2;
}

TEST(Warp, ShuffleAllKindsAndWidths) {
    constexpr int kThreads = 128;  // four warps
    DeviceBuffer<int> d(kThreads);
    ASSERT_CUDA_OK(d.status());
    const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
    for (int op : {kIdx, kUp, kDown, kXor}) {
        for (int width : {32, 16, 8, 4, 2}) {
            for (int arg : {0, 1, 3, 5, 13}) {
                if (op == kXor && arg == 0) continue;
                SCOPED_TRACE(::testing::Message() << names[op] << " arg " << arg << " width " << width);
                shuffle<<<1, kThreads>>>(d.get(), op, arg, width);
                auto r = launch_result();
                ASSERT_CUDA_OK(r.launch);
                ASSERT_CUDA_OK(r.sync);
                const auto h = download_ok(d);
                ASSERT_EQ(h.size(), size_t(kThreads));
                for (int t = 0; t < kThreads; ++t) {
                    const int expect = 1000 * (t / 32) + expected_shuffle(op, t % 32, arg, width);
                    ASSERT_EQ(h[t], expect) << "thread " << t;
                }
            }
        }
    }
}

// Butterfly all-reduce on doubles: every lane ends with the sum of its width-segment.
__global__ void xor_allreduce(double* out, int width) {
    double v = 0.5 * threadIdx.x;
    for (int m = width / 2; m > 0; m /= 2) v += __shfl_xor_sync(kFull, v, m, width);
    out[threadIdx.x] = v;
}

TEST(Warp, XorButterflyOnDoubles) {
    DeviceBuffer<double> d(64);
    ASSERT_CUDA_OK(d.status());
    for (int width : {32, 8}) {
        xor_allreduce<<<1, 64>>>(d.get(), width);
        ASSERT_CUDA_OK(cudaGetLastError());
        const auto h = download_ok(d);
        ASSERT_EQ(h.size(), 64u);
        for (int t = 0; t < 64; ++t) {
            const int first = t & ~(width - 1);
            double expect = 0;
            for (int k = first; k < first + width; ++k) expect += 0.5 * k;
            EXPECT_EQ(h[t], expect) << "thread " << t << " width " << width;
        }
    }
}

// Inclusive warp scan with __shfl_up_sync on 64-bit integers.
__global__ void warp_scan(long long* out) {
    const int lane = threadIdx.x % 32;
    long long v = (1LL << 33) + threadIdx.x;
    for (int d = 1; d < 32; d *= 2) {
        const long long up = __shfl_up_sync(kFull, v, d);
        if (lane >= d) v += up;
    }
    out[threadIdx.x] = v;
}

TEST(Warp, ShuffleUpScanOn64BitValues) {
    DeviceBuffer<long long> d(96);
    ASSERT_CUDA_OK(d.status());
    warp_scan<<<1, 96>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 96u);
    for (int t = 0; t < 96; ++t) {
        long long expect = 0;
        for (int k = t & ~31; k <= t; ++k) expect += (1LL << 33) + k;
        EXPECT_EQ(h[t], expect) << "thread " << t;
    }
}

// Votes: ballot, any, all, with predicates that differ per warp. __activemask() is read first,
// where the whole warp is converged. (After the last warp-level operation CUDA does not promise
// convergence, and on cusim lanes that ran ahead to the end of the kernel have exited.)
__global__ void votes(unsigned* out) {
    const unsigned active = __activemask();
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned* row = out + 5 * threadIdx.x;
    row[0] = __ballot_sync(kFull, lane % 2 == 0);
    row[1] = __ballot_sync(kFull, lane < warp);
    row[2] = __any_sync(kFull, lane == 31 && warp == 1);
    row[3] = __all_sync(kFull, lane < 32 - warp);
    row[4] = active;
}

TEST(Warp, BallotAnyAllActivemask) {
    constexpr int kThreads = 96;
    DeviceBuffer<unsigned> d(5 * kThreads);
    ASSERT_CUDA_OK(d.status());
    votes<<<1, kThreads>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(5 * kThreads));
    for (int t = 0; t < kThreads; ++t) {
        const unsigned warp = t / 32;
        SCOPED_TRACE(::testing::Message() << "thread " << t);
        EXPECT_EQ(h[5 * t + 0], 0x55555555u);
        EXPECT_EQ(h[5 * t + 1], warp == 0 ? 0u : (1u << warp) - 1u);
        EXPECT_EQ(h[5 * t + 2], warp == 1 ? 1u : 0u);
        EXPECT_EQ(h[5 * t + 3], warp == 0 ? 1u : 0u);
        EXPECT_EQ(h[5 * t + 4], kFull);
        if (testing::Test::HasFailure()) break;
    }
}

// Lanes that returned are inactive: the remaining lanes' __activemask() names only themselves,
// and a vote over that mask completes (the usual tail handling of a partial last warp).
__global__ void activemask_after_return(unsigned* out, int n) {
    if (static_cast<int>(threadIdx.x) >= n) return;
    const unsigned mask = __activemask();
    const unsigned voters = __ballot_sync(mask, 1);
    out[2 * threadIdx.x] = mask;
    out[2 * threadIdx.x + 1] = voters;
}

TEST(Warp, ActivemaskExcludesLanesThatReturned) {
    constexpr int kLive = 20;
    DeviceBuffer<unsigned> d(64);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(d.fill_bytes(0));
    activemask_after_return<<<1, 32>>>(d.get(), kLive);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int t = 0; t < kLive; ++t) {
        EXPECT_EQ(h[2 * t], (1u << kLive) - 1u) << "lane " << t;
        EXPECT_EQ(h[2 * t + 1], (1u << kLive) - 1u) << "lane " << t;
    }
}

// A block of 40 threads: the second warp has 8 lanes. Intrinsics with the mask of the lanes
// that exist work there, and __activemask reports exactly those lanes.
__global__ void partial_warp(unsigned* out) {
    const unsigned mask = __activemask();
    const unsigned lane = threadIdx.x % 32;
    const unsigned ballot = __ballot_sync(mask, lane >= 4);
    const int sum = [&] {
        int v = static_cast<int>(lane);
        for (int m = 1; m < 32; m *= 2) {
            const int other = __shfl_xor_sync(mask, v, m);
            // Lanes whose partner does not exist keep their own value, as CUDA documents.
            if ((lane ^ m) < 32 && (mask >> (lane ^ m)) & 1u) v += other;
        }
        return v;
    }();
    out[3 * threadIdx.x + 0] = mask;
    out[3 * threadIdx.x + 1] = ballot;
    out[3 * threadIdx.x + 2] = static_cast<unsigned>(sum);
}

TEST(Warp, PartialLastWarp) {
    constexpr int kThreads = 40;
    DeviceBuffer<unsigned> d(3 * kThreads);
    ASSERT_CUDA_OK(d.status());
    partial_warp<<<2, kThreads>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(3 * kThreads));
    for (int t = 0; t < kThreads; ++t) {
        SCOPED_TRACE(::testing::Message() << "thread " << t);
        const bool second = t >= 32;
        EXPECT_EQ(h[3 * t + 0], second ? 0xffu : kFull);
        EXPECT_EQ(h[3 * t + 1], second ? 0xf0u : 0xfffffff0u);
        EXPECT_EQ(h[3 * t + 2], second ? 0u + 1 + 2 + 3 + 4 + 5 + 6 + 7 : 31u * 32u / 2u);
    }
}

// __syncwarp orders shared-memory accesses inside a warp: each lane reads what its neighbour
// wrote. Without the __syncwarp this is a race (and fails on cusim, where lanes run in turn).
__global__ void syncwarp_exchange(int* out, int rounds) {
    __shared__ int slot[64];
    const int lane = threadIdx.x % 32;
    int v = static_cast<int>(threadIdx.x);
    for (int r = 0; r < rounds; ++r) {
        slot[threadIdx.x] = v;
        __syncwarp();
        v = slot[(threadIdx.x & ~31u) + (lane + 1) % 32];
        __syncwarp();
    }
    out[threadIdx.x] = v;
}

TEST(Warp, SyncwarpOrdersSharedMemory) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    constexpr int kRounds = 5;
    syncwarp_exchange<<<1, 64>>>(d.get(), kRounds);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int t = 0; t < 64; ++t) EXPECT_EQ(h[t], (t & ~31) + (t % 32 + kRounds) % 32) << "thread " << t;
}

// Shuffles restricted to half a warp: lanes 0..15 and 16..31 synchronize separately with their
// own masks, in different branches.
__global__ void half_warp_masks(int* out) {
    const int lane = threadIdx.x % 32;
    int v;
    if (lane < 16)
        v = __shfl_sync(0x0000ffffu, lane * 10, 15);
    else
        v = __shfl_down_sync(0xffff0000u, lane * 10, 1);
    out[threadIdx.x] = v;
}

TEST(Warp, DisjointMasksInDivergentBranches) {
    DeviceBuffer<int> d(32);
    ASSERT_CUDA_OK(d.status());
    half_warp_masks<<<1, 32>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 32u);
    for (int l = 0; l < 16; ++l) EXPECT_EQ(h[l], 150) << "lane " << l;
    for (int l = 16; l < 31; ++l) EXPECT_EQ(h[l], (l + 1) * 10) << "lane " << l;
    EXPECT_EQ(h[31], 310);  // no lane 32: keeps its own value
}

// CUDA's rule for *_sync intrinsics and __syncwarp: every thread named in the mask that has NOT
// exited must take part. Lanes 16..31 return first; the full-mask shuffle (reading an active lane)
// and the full-mask __syncwarp then complete with lanes 0..15 alone, as they do on a GPU.
__global__ void full_mask_after_half_warp_returned(int* out, int* order) {
    __shared__ int stage[32];
    const int lane = threadIdx.x % 32;
    if (lane >= 16) return;
    const int v = __shfl_sync(kFull, lane * 10, (lane + 1) % 16);
    stage[lane] = v;
    __syncwarp(kFull);
    out[threadIdx.x] = stage[15 - lane];
    order[threadIdx.x] = __ballot_sync(kFull, 1);  // the exited lanes contribute nothing
}

TEST(Warp, FullMaskIntrinsicsAfterLanesExited) {
    DeviceBuffer<int> d(64), ballot(64);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(ballot.status());
    full_mask_after_half_warp_returned<<<1, 64>>>(d.get(), ballot.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    const auto b = download_ok(ballot);
    for (int t = 0; t < 64; ++t) {
        if (t % 32 >= 16) continue;
        const int reader = 15 - t % 32;  // stage[15 - lane] holds lane (15 - lane)'s shuffle result
        EXPECT_EQ(h[t], ((reader + 1) % 16) * 10) << "thread " << t;
        EXPECT_EQ(static_cast<unsigned>(b[t]), 0x0000ffffu) << "thread " << t;
    }
}
