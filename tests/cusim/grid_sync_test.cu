// Grid-wide synchronization: cooperative launches (cudaLaunchCooperativeKernel) whose blocks meet
// at cooperative_groups::this_grid().sync(). cusim runs every block of such a launch together and
// parks each block at the grid barrier; these tests check what must survive the parking (each
// thread's locals, each block's shared memory), CUDA's launch rules (a grid larger than the device
// holds at once is cudaErrorCooperativeLaunchTooLarge, and not sticky), and, on cusim only, the
// reports for what hangs or is undefined on a GPU: grid.sync() in a launch that is not
// cooperative, blocks that exit while others wait at the grid barrier, a block whose threads wait
// at grid.sync() and at __syncthreads().
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include "cusim_test.h"

namespace cg = cooperative_groups;
using cusim_test::DeviceBuffer;
using cusim_test::LaunchResult;
using cusim_test::report_contains;

namespace {

// Each block fills its shared array with values of its own, keeps a per-thread local, and checks
// both after every one of `phases` grid barriers, while writing to global memory a value that
// depends on what another block wrote before the barrier.
__global__ void phases_keep_state(int* data, int* errors, int phases) {
    cg::grid_group grid = cg::this_grid();
    __shared__ int tile[128];
    const int b = static_cast<int>(grid.block_rank());
    const int t = static_cast<int>(threadIdx.x);
    const int nb = static_cast<int>(grid.num_blocks());
    int local = b * 1000 + t;  // lives on the thread's stack across grid.sync()
    tile[t] = b * 7 + t;
    data[b * blockDim.x + t] = b;
    for (int p = 0; p < phases; ++p) {
        grid.sync();
        if (tile[t] != b * 7 + t + p) atomicAdd(errors, 1);
        if (local != b * 1000 + t + p) atomicAdd(errors, 1);
        const int other = (b + 1) % nb;
        if (data[other * blockDim.x + t] != other + p) atomicAdd(errors, 1);
        grid.sync();
        data[b * blockDim.x + t] = b + p + 1;
        tile[t] += 1;
        local += 1;
        __syncthreads();
    }
}

TEST(GridSync, LocalsSharedMemoryAndGlobalWritesSurviveEveryBarrier) {
    for (int blocks : {2, 3, 17, 64}) {
        DeviceBuffer<int> data(blocks * 128), errors(1);
        ASSERT_CUDA_OK(errors.upload(std::vector<int>{0}));
        int* d = data.get();
        int* e = errors.get();
        int phases = 5;
        void* args[] = {&d, &e, &phases};
        ASSERT_CUDA_OK(cudaLaunchCooperativeKernel(phases_keep_state, dim3(blocks), dim3(128), args, 0, 0));
        ASSERT_CUDA_OK(cudaDeviceSynchronize());
        EXPECT_EQ(errors.download()[0], 0) << blocks << " blocks";
    }
}

__global__ void empty_grid_kernel(int* out) {
    cg::this_grid().sync();
    if (out && cg::this_grid().thread_rank() == 0) *out = 1;
}

TEST(GridSync, CooperativeLaunchLargerThanTheDeviceHoldsIsRejected) {
    cudaDeviceProp prop;
    ASSERT_CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    for (int threads : {64, 256, 1024}) {
        int per_sm = 0;
        ASSERT_CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, empty_grid_kernel, threads, 0));
        ASSERT_GT(per_sm, 0);
        const int most = per_sm * prop.multiProcessorCount;
        int* out = nullptr;
        void* args[] = {&out};
        EXPECT_CUDA(cudaErrorCooperativeLaunchTooLarge,
                    cudaLaunchCooperativeKernel(empty_grid_kernel, dim3(most + 1), dim3(threads), args, 0, 0));
        EXPECT_CUDA(cudaErrorCooperativeLaunchTooLarge, cudaGetLastError());
        EXPECT_CUDA_OK(cudaGetLastError()) << "not sticky";
        EXPECT_CUDA_OK(cudaLaunchCooperativeKernel(empty_grid_kernel, dim3(most), dim3(threads), args, 0, 0))
            << most << " blocks of " << threads;
    }
    // Dynamic shared memory counts too: 100 KiB per block leaves room for 2 blocks per SM.
    int per_sm = 0;
    ASSERT_CUDA_OK(cudaFuncSetAttribute(empty_grid_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    ASSERT_CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, empty_grid_kernel, 128, 100 * 1024));
    int* out = nullptr;
    void* args[] = {&out};
    EXPECT_CUDA(cudaErrorCooperativeLaunchTooLarge,
                cudaLaunchCooperativeKernel(empty_grid_kernel, dim3(per_sm * prop.multiProcessorCount + 1), dim3(128),
                                            args, 100 * 1024, 0));
}

__global__ void report_validity(int* valid) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *valid = cg::this_grid().is_valid() ? 1 : 0;
}

TEST(GridSync, IsValidOnlyInCooperativeLaunches) {
    DeviceBuffer<int> valid(1);
    int* v = valid.get();
    report_validity<<<4, 32>>>(v);
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(valid.download()[0], 0);
    void* args[] = {&v};
    ASSERT_CUDA_OK(cudaLaunchCooperativeKernel(report_validity, dim3(4), dim3(32), args, 0, 0));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(valid.download()[0], 1);
}

// ---- What hangs or is undefined on a GPU: cusim reports it --------------------------------------

class GridSyncFaults : public cusim_test::SimFaultTest {};

__global__ void grid_sync_everywhere(int* out) {
    cg::grid_group grid = cg::this_grid();
    out[grid.thread_rank()] = 1;
    grid.sync();  // @not-cooperative
    out[grid.thread_rank()] = 2;
}

TEST_F(GridSyncFaults, GridSyncInALaunchThatIsNotCooperative) {
    DeviceBuffer<int> out(4 * 64);
    const LaunchResult r = run("grid.sync() without a cooperative launch", [&] { grid_sync_everywhere<<<4, 64>>>(out.get()); });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"grid_sync_everywhere", "not cooperative", FILE_LINE("not-cooperative"),
                                         "cudaLaunchCooperativeKernel"}));
}

TEST_F(GridSyncFaults, GridSyncInANonCooperativeLaunchOfOneBlockIsABlockBarrier) {
    DeviceBuffer<int> out(64);
    const LaunchResult r = run("grid.sync() in one block", [&] { grid_sync_everywhere<<<1, 64>>>(out.get()); });
    EXPECT_CUDA_OK(r.sync);
    EXPECT_EQ(out.download(), std::vector<int>(64, 2));
}

__global__ void some_blocks_return_early(int* out) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 1) return;  // this block never reaches the grid barrier
    grid.sync();                  // @grid-deadlock
    out[blockIdx.x] = 1;
}

TEST_F(GridSyncFaults, BlocksExitingWhileOthersWaitAtGridSync) {
    DeviceBuffer<int> out(4);
    int* o = out.get();
    void* args[] = {&o};
    const LaunchResult r = run("a block exits before grid.sync()", [&] {
        (void)cudaLaunchCooperativeKernel((void*)some_blocks_return_early, dim3(4), dim3(32), args, 0, 0);
    });
    EXPECT_CUDA(cudaErrorLaunchTimeout, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"Grid barrier deadlock", "some_blocks_return_early", "3 block(s) wait",
                                         "1 block(s) have exited", FILE_LINE("grid-deadlock")}));
}

__global__ void grid_sync_against_syncthreads(int* out) {
    if (threadIdx.x < 16)
        cg::this_grid().sync();  // @grid-divergent
    else
        __syncthreads();  // @block-divergent
    out[threadIdx.x] = 1;
}

TEST_F(GridSyncFaults, ThreadsOfABlockAtGridSyncAndAtSyncthreads) {
    DeviceBuffer<int> out(64);
    int* o = out.get();
    void* args[] = {&o};
    const LaunchResult r = run("grid.sync() against __syncthreads", [&] {
        (void)cudaLaunchCooperativeKernel(grid_sync_against_syncthreads, dim3(2), dim3(32), args, 0, 0);
    });
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"divergent", FILE_LINE("grid-divergent"), FILE_LINE("block-divergent")}));
}

__global__ void fault_after_grid_sync(int* out) {
    cg::grid_group grid = cg::this_grid();
    grid.sync();
    int* p = blockIdx.x == 2 && threadIdx.x == 5 ? nullptr : out;
    p[grid.thread_rank()] = 1;  // block 2 thread 5 writes through NULL
    grid.sync();
}

TEST_F(GridSyncFaults, FaultInOneBlockEndsTheLaunchAndTheNextLaunchRuns) {
    {
        DeviceBuffer<int> out(6 * 32);
        int* o = out.get();
        void* args[] = {&o};
        const LaunchResult r = run("fault after grid.sync()", [&] {
            (void)cudaLaunchCooperativeKernel(fault_after_grid_sync, dim3(6), dim3(32), args, 0, 0);
        });
        EXPECT_CUDA(cudaErrorIllegalAddress, r.sync);
    }
    ASSERT_CUDA_OK(cudaDeviceReset());
    DeviceBuffer<int> data(6 * 128), errors(1);
    ASSERT_CUDA_OK(errors.upload(std::vector<int>{0}));
    int* d = data.get();
    int* e = errors.get();
    int phases = 3;
    void* args2[] = {&d, &e, &phases};
    ASSERT_CUDA_OK(cudaLaunchCooperativeKernel(phases_keep_state, dim3(6), dim3(128), args2, 0, 0));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(errors.download()[0], 0);
}

}  // namespace
