// Synchronization faults: barriers and warp intrinsics that cannot complete. On a GPU these
// kernels hang or behave undefinedly; cusim must end each launch with an error and a report
// naming the lines involved. Every launch runs under finish_within(): a hang fails the test
// with a clear message instead of stalling the suite (ctest's TIMEOUT is only a backstop).
//
// The kernels are valid CUDA (nvcc compiles them); they are run only on the sim backend.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_runtime.h>

#include <chrono>
#include <string>

#include "cusim_test.h"

namespace cg = cooperative_groups;

// libcu++'s barrier has a constructor, so nvcc warns about a __shared__ one (NVIDIA's samples
// silence it the same way); the kernels initialize it with init().
#pragma nv_diag_suppress static_var_with_dynamic_init

using cusim_test::DeviceBuffer;
using cusim_test::LaunchResult;
using cusim_test::report_contains;

class SyncFaults : public cusim_test::SimFaultTest {};

// Half the block waits at one __syncthreads, the other half at another.
__global__ void divergent_barrier(int* out) {
    if (threadIdx.x < 16) {
        __syncthreads();  // @barrier-a
        out[threadIdx.x] = 1;
    } else {
        __syncthreads();  // @barrier-b
        out[threadIdx.x] = 2;
    }
}

TEST_F(SyncFaults, DivergentSyncthreads) {
    DeviceBuffer<int> out(64);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("divergent __syncthreads", [&] { divergent_barrier<<<1, 64>>>(out.get()); });
    EXPECT_TRUE(r.launch == cudaErrorLaunchFailure || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"divergent __syncthreads", "divergent_barrier", FILE_LINE("barrier-a"),
                                         FILE_LINE("barrier-b"), "cudaErrorLaunchFailure"}));
}

// Lanes 0..15 of warp 0 wait at __syncthreads while lanes 16..31 wait at a full-warp shuffle
// that needs lanes 0..15: neither can complete.
__global__ void barrier_against_shuffle(int* out) {
    int v = static_cast<int>(threadIdx.x);
    if (threadIdx.x < 16) {
        __syncthreads();  // @deadlock-barrier
    } else if (threadIdx.x < 32) {
        v = __shfl_sync(0xffffffffu, v, 0);  // @deadlock-shuffle
    } else {
        __syncthreads();  // @deadlock-barrier-2
    }
    out[threadIdx.x] = v;
}

TEST_F(SyncFaults, SyncthreadsAgainstWarpShuffleIsADeadlock) {
    DeviceBuffer<int> out(64);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("__syncthreads/__shfl_sync deadlock", [&] { barrier_against_shuffle<<<1, 64>>>(out.get()); });
    EXPECT_TRUE(r.launch == cudaErrorLaunchTimeout || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorLaunchTimeout, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"deadlock", "barrier_against_shuffle", FILE_LINE("deadlock-barrier"),
                                         FILE_LINE("deadlock-shuffle"), "cudaErrorLaunchTimeout"}));
}

// One block among many deadlocks while the others run on parallel workers: the launch still
// ends, with the failing block named.
__global__ void one_block_deadlocks(int* out) {
    if (blockIdx.x == 5 && threadIdx.x == 0) {
        __shfl_sync(0xffffffffu, 1, 0);  // @block5-shuffle
    } else {
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

TEST_F(SyncFaults, DeadlockInOneBlockOfMany) {
    DeviceBuffer<int> out(64 * 32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("deadlock in block 5 of 64", [&] { one_block_deadlocks<<<64, 32>>>(out.get()); });
    EXPECT_NE(r.sync, cudaSuccess) << "the deadlocked block must fail the launch";
    EXPECT_TRUE(r.sync == cudaErrorLaunchTimeout || r.sync == cudaErrorLaunchFailure) << cudaGetErrorName(r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"one_block_deadlocks", "block (5,0,0)", FILE_LINE("block5-shuffle")}));
}

// Lane 31 returns before the shuffle that names it, and lane 30 reads lane 31's value. Lanes that
// exited do not take part (CUDA's rule), but there is no value to read from one: an error.
__global__ void shuffle_reading_an_exited_lane(int* out) {
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), (threadIdx.x + 1) % 32);  // @exited-shuffle
}

TEST_F(SyncFaults, ShuffleReadingAnExitedLane) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("shuffle reading an exited lane", [&] { shuffle_reading_an_exited_lane<<<1, 32>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"shuffle_reading_an_exited_lane", "lane 30", "reads lane 31", "exited",
                                         FILE_LINE("exited-shuffle"), "0xffffffff"}));
}

// Lane 0 calls a shuffle whose mask leaves out lane 0 itself.
__global__ void mask_without_self(int* out) {
    out[threadIdx.x] = __shfl_sync(0xfffffffeu, static_cast<int>(threadIdx.x), 1);  // @no-self
}

TEST_F(SyncFaults, ShuffleMaskWithoutTheCallingLane) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("mask without the caller", [&] { mask_without_self<<<1, 32>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"mask_without_self", "lane 0", "does not include the calling lane",
                                         FILE_LINE("no-self")}));
}

// Lanes 0..15 synchronize on the full warp, lanes 16..31 on their own half: the masks overlap
// but differ. The half-warp shuffle completes, and its lanes exit without ever reaching the
// full-warp one that names them, which is reported (masks that overlap are no error by themselves:
// lanes of a binary_partition() group shuffle among themselves while others wait for the warp,
// conformance cg_partition).
__global__ void mismatched_masks(int* out) {
    int v = static_cast<int>(threadIdx.x);
    if (threadIdx.x < 16)
        v = __shfl_sync(0xffffffffu, v, 0);  // @mask-full
    else
        v = __shfl_sync(0xffff0000u, v, 16);  // @mask-half
    out[threadIdx.x] = v;
}

TEST_F(SyncFaults, MismatchedMasks) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("mismatched shuffle masks", [&] { mismatched_masks<<<1, 32>>>(out.get()); });
    EXPECT_NE(r.sync, cudaSuccess);
    EXPECT_TRUE(r.sync == cudaErrorLaunchFailure || r.sync == cudaErrorLaunchTimeout) << cudaGetErrorName(r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"mismatched_masks", "0xffff0000", FILE_LINE("mask-full")}));
}

// Different intrinsics with the same mask.
__global__ void ballot_against_shuffle(int* out) {
    int v = static_cast<int>(threadIdx.x);
    if (threadIdx.x % 2)
        v = static_cast<int>(__ballot_sync(0xffffffffu, 1));  // @mixed-ballot
    else
        v = __shfl_sync(0xffffffffu, v, 0);  // @mixed-shuffle
    out[threadIdx.x] = v;
}

TEST_F(SyncFaults, DifferentIntrinsicsWithTheSameMask) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("ballot against shuffle", [&] { ballot_against_shuffle<<<1, 32>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"ballot_against_shuffle", "__ballot_sync", "__shfl_sync"}));
}

// A full mask in a block of 20 threads names lanes 20..31, which do not exist: like exited lanes,
// they do not take part, but lane 19's shuffle down reads lane 20, where no value exists.
__global__ void mask_names_missing_lanes(int* out) {
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);  // @missing-lanes
}

TEST_F(SyncFaults, ShuffleReadingALaneThatDoesNotExist) {
    DeviceBuffer<int> out(20);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("shuffle reading a missing lane", [&] { mask_names_missing_lanes<<<1, 20>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"mask_names_missing_lanes", "lane 19", "reads lane 20, which does not exist",
                                         "blockDim has 20 threads", FILE_LINE("missing-lanes")}));
}

// The same full mask where every lane reads a lane that exists (a shuffle up, a vote, __syncwarp):
// it completes, as on a GPU (cooperative groups' 32-thread tiles pass this mask in a partial warp).
__global__ void full_mask_in_partial_warp(int* out) {
    const int v = __shfl_up_sync(0xffffffffu, static_cast<int>(threadIdx.x) + 1, 1);
    const unsigned ballot = __ballot_sync(0xffffffffu, threadIdx.x % 2 == 0);
    __syncwarp();
    out[threadIdx.x] = threadIdx.x >= 1 ? v : static_cast<int>(ballot);
}

TEST_F(SyncFaults, FullMaskInAPartialWarpTakesTheLanesThatExist) {
    DeviceBuffer<int> out(20);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("full mask in a partial warp", [&] { full_mask_in_partial_warp<<<1, 20>>>(out.get()); });
    ASSERT_CUDA_OK(r.sync);
    std::vector<int> got(20);
    ASSERT_CUDA_OK(cudaMemcpy(got.data(), out.get(), 20 * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(got[0], 0x55555) << "the ballot holds the even lanes of the 20 that exist";
    for (int i = 1; i < 20; ++i) EXPECT_EQ(got[i], i) << "lane " << i << " reads lane " << i - 1;
}

// __syncwarp with a mask some named lanes never reach (they wait at __syncthreads instead).
__global__ void syncwarp_against_barrier(int* out) {
    if (threadIdx.x < 8)
        __syncwarp(0x000000ffu | 0x100u);  // @syncwarp-wait
    else
        __syncthreads();
    out[threadIdx.x] = 1;
}

TEST_F(SyncFaults, SyncwarpWaitingForALaneAtSyncthreads) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("__syncwarp against __syncthreads", [&] { syncwarp_against_barrier<<<1, 32>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchTimeout, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"syncwarp_against_barrier", FILE_LINE("syncwarp-wait"), "cudaErrorLaunchTimeout"}));
}

// cuda::barrier: half the block exits without arriving, the other half waits for a phase that
// needs every thread's arrival.
__global__ void barrier_missing_arrivals(int* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    if (threadIdx.x % 2) return;
    bar.arrive_and_wait();  // @bar-wait
    out[threadIdx.x] = 1;
}

TEST_F(SyncFaults, CudaBarrierPhaseThatCannotComplete) {
    DeviceBuffer<int> out(64);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("cuda::barrier missing arrivals", [&] { barrier_missing_arrivals<<<1, 64>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchTimeout, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"deadlock", "barrier_missing_arrivals", "wait at a cuda::barrier",
                                         FILE_LINE("bar-wait"), "32 thread(s) of the block have exited"}));
}

// Thread 5 arrives with an update larger than the whole phase expects.
__global__ void barrier_too_many_arrivals(int* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    auto token = bar.arrive(threadIdx.x == 5 ? blockDim.x + 8 : 1);  // @bar-over
    bar.wait(std::move(token));
    out[threadIdx.x] = 1;
}

TEST_F(SyncFaults, CudaBarrierArrivalsBeyondTheExpectedCount) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("cuda::barrier over-arrival", [&] { barrier_too_many_arrivals<<<1, 32>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"barrier_too_many_arrivals", "thread (5,0,0)",
                                         "more arrivals than the phase expects", FILE_LINE("bar-over")}));
}

// cuda::memcpy_async with cuda::aligned_size_t<16> from a pointer 4 bytes past a 16-byte boundary.
__global__ void misaligned_async_copy(const float* in, float* out) {
    __shared__ alignas(16) float s[8];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(s, in + 1, cuda::aligned_size_t<16>(16), pipe);  // @misaligned-copy
    pipe.producer_commit();
    pipe.consumer_wait();
    out[0] = s[0];
}

TEST_F(SyncFaults, AsyncCopyBreakingItsAlignedSize) {
    DeviceBuffer<float> in(16), out(1);
    ASSERT_CUDA_OK(in.status());
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("misaligned memcpy_async", [&] { misaligned_async_copy<<<1, 1>>>(in.get(), out.get()); });
    EXPECT_CUDA(cudaErrorMisalignedAddress, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"Misaligned address", "misaligned_async_copy", "aligned_size_t<N>",
                                         FILE_LINE("misaligned-copy")}));
}

// A thread-scope pipeline's copy lands when its stage is waited for: a read of the destination
// before consumer_wait() sees the old value (on a GPU: either value, a race the program must not
// have), the read after it the copied one.
__global__ void read_before_wait(const int* in, int* out) {
    __shared__ int s[32];
    s[threadIdx.x] = -1;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(int), pipe);
    pipe.producer_commit();
    out[threadIdx.x] = s[threadIdx.x];
    pipe.consumer_wait();
    out[32 + threadIdx.x] = s[threadIdx.x];
}

TEST_F(SyncFaults, PipelineCopyLandsAtTheWait) {
    DeviceBuffer<int> in(32), out(64);
    ASSERT_CUDA_OK(in.status());
    ASSERT_CUDA_OK(out.status());
    std::vector<int> h(32);
    for (int i = 0; i < 32; ++i) h[i] = 100 + i;
    ASSERT_CUDA_OK(cudaMemcpy(in.get(), h.data(), 32 * sizeof(int), cudaMemcpyHostToDevice));
    const LaunchResult r = run("read before consumer_wait", [&] { read_before_wait<<<1, 32>>>(in.get(), out.get()); });
    ASSERT_CUDA_OK(r.sync);
    std::vector<int> got(64);
    ASSERT_CUDA_OK(cudaMemcpy(got.data(), out.get(), 64 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(got[i], -1) << "lane " << i << " before the wait";
        EXPECT_EQ(got[32 + i], 100 + i) << "lane " << i << " after the wait";
    }
}

// A 64-thread tile whose last thread has exited: the others wait at the tile's sync() forever.
__global__ void tile_sync_after_exit(int* out) {
    __shared__ cg::block_tile_memory<128> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<64>(block);
    if (tile.thread_rank() == 63) return;
    tile.sync();  // @tile-sync
    out[threadIdx.x] = 1;
}

TEST_F(SyncFaults, MultiWarpTileSyncWithAnExitedThread) {
    DeviceBuffer<int> out(128);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("multi-warp tile sync after an exit", [&] { tile_sync_after_exit<<<1, 128>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchTimeout, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"tile_sync_after_exit", "a thread_block_tile's sync()", FILE_LINE("tile-sync")}));
}
