// Synchronization faults: barriers and warp intrinsics that cannot complete. On a GPU these
// kernels hang or behave undefinedly; cusim must end each launch with an error and a report
// naming the lines involved. Every launch runs under finish_within(): a hang fails the test
// with a clear message instead of stalling the suite (ctest's TIMEOUT is only a backstop).
//
// The kernels are valid CUDA (nvcc compiles them); they are run only on the sim backend.
#include <cuda_runtime.h>

#include <chrono>
#include <string>

#include "cusim_test.h"

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

// A full mask in a block of 20 threads names lanes 20..31, which do not exist.
__global__ void mask_names_missing_lanes(int* out) {
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);  // @missing-lanes
}

TEST_F(SyncFaults, MaskNamingLanesThatDoNotExist) {
    DeviceBuffer<int> out(20);
    ASSERT_CUDA_OK(out.status());
    const LaunchResult r = run("mask naming missing lanes", [&] { mask_names_missing_lanes<<<1, 20>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"mask_names_missing_lanes", "do not exist", FILE_LINE("missing-lanes")}));
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
