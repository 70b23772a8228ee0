// With CUSIM_THREADS=1 cusim runs blocks one at a time in launch order (x fastest, then y,
// then z), so a run is reproducible bit for bit, float atomics included. ctest runs this
// binary with CUSIM_THREADS=1. On a GPU the order is unspecified: only that every block ran
// exactly once is checked there.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
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

#ifdef CUSIM
static bool single_worker() {
    const char* e = std::getenv("CUSIM_THREADS");
    return e && std::strcmp(e, "1") == 0;
}
#endif

// Thread 0 of each block takes a ticket: the position of the block in execution order.
__global__ void record_order(unsigned* next_ticket, unsigned* ticket_of_block) {
    if (threadIdx.x == 0) {
        const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        ticket_of_block[b] = atomicAdd(next_ticket, 1u);
    }
}

TEST(BlockOrder, BlocksRunInLaunchOrderWithOneWorker) {
    const dim3 grid(7, 5, 3);
    const unsigned nblocks = grid.x * grid.y * grid.z;
    DeviceBuffer<unsigned> counter(1), tickets(nblocks);
    ASSERT_CUDA_OK(counter.status());
    ASSERT_CUDA_OK(tickets.status());
    for (int rep = 0; rep < 3; ++rep) {
        SCOPED_TRACE(::testing::Message() << "repetition " << rep);
        ASSERT_CUDA_OK(counter.fill_bytes(0));
        record_order<<<grid, 64>>>(counter.get(), tickets.get());
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto h = download_ok(tickets);
        ASSERT_EQ(h.size(), size_t(nblocks));
        // Every backend: each block ran exactly once.
        auto sorted = h;
        std::sort(sorted.begin(), sorted.end());
        for (unsigned k = 0; k < nblocks; ++k) ASSERT_EQ(sorted[k], k) << "tickets are not a permutation";
#ifdef CUSIM
        if (!single_worker()) GTEST_SKIP() << "block order is only fixed with CUSIM_THREADS=1 (ctest sets it)";
        for (unsigned b = 0; b < nblocks; ++b) EXPECT_EQ(h[b], b) << "block " << b << " ran out of order";
#endif
    }
}

// Float addition is not associative: the sum depends on the order of the atomics. With one
// worker that order, and so every bit of the result, is the same in every run.
__global__ void float_atomic_sum(const float* values, float* sum) {
    atomicAdd(sum, values[blockIdx.x * blockDim.x + threadIdx.x]);
}

TEST(BlockOrder, FloatAtomicsAreReproducible) {
    constexpr int kBlocks = 512, kThreads = 128, n = kBlocks * kThreads;
    std::vector<float> values(n);
    for (int i = 0; i < n; ++i) values[i] = 1.0f / static_cast<float>(1 + (i * 7919) % 1000);
    DeviceBuffer<float> dv(n), sum(1);
    ASSERT_CUDA_OK(dv.status());
    ASSERT_CUDA_OK(sum.status());
    ASSERT_CUDA_OK(dv.upload(values));
    std::vector<float> results;
    for (int rep = 0; rep < 4; ++rep) {
        ASSERT_CUDA_OK(sum.fill_bytes(0));
        float_atomic_sum<<<kBlocks, kThreads>>>(dv.get(), sum.get());
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto h = download_ok(sum);
        ASSERT_EQ(h.size(), 1u);
        results.push_back(h[0]);
    }
    double exact = 0;
    for (float v : values) exact += v;
    // Recursive summation in any order: |error| <= (n - 1) * 2^-24 * sum |x| (Higham, 4.2).
    const double bound = (n - 1) * std::ldexp(1.0, -24) * exact;
    for (float got : results) EXPECT_NEAR(got, exact, bound);
#ifdef CUSIM
    if (!single_worker()) GTEST_SKIP() << "bitwise reproducibility needs CUSIM_THREADS=1 (ctest sets it)";
    for (size_t k = 1; k < results.size(); ++k) {
        unsigned a, b;
        std::memcpy(&a, &results[0], 4);
        std::memcpy(&b, &results[k], 4);
        EXPECT_EQ(a, b) << "run " << k << " differs from run 0: " << results[k] << " vs " << results[0];
    }
#endif
}
