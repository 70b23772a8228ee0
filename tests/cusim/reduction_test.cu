// Reductions over 2^20 elements, the lab workhorse: a shared-memory tree, a warp-shuffle
// reduction, and a single-pass reduction whose last block finishes the sum (__threadfence).
// Inputs are small integers, so every float partial sum is exact and results compare exactly.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

namespace {
constexpr int kN = 1 << 20;
constexpr int kThreads = 256;

// Values 0..15: the total (< 2^24) and every partial sum are exact in float.
std::vector<float> small_integer_floats() {
    std::vector<float> v(kN);
    for (int i = 0; i < kN; ++i) v[i] = static_cast<float>((static_cast<uint32_t>(i) * 2654435761u) >> 28);
    return v;
}
double exact_sum(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += x;
    return s;
}
}  // namespace

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

// Classic tree reduction: two loads per thread, then halving strides with __syncthreads.
template <unsigned BlockSize>
__global__ void reduce_smem(const float* in, float* block_sums, int n) {
    __shared__ float s[BlockSize];
    const unsigned t = threadIdx.x;
    const unsigned i = blockIdx.x * (BlockSize * 2) + t;
    float v = 0.0f;
    if (i < n) v += in[i];
    if (i + BlockSize < n) v += in[i + BlockSize];
    s[t] = v;
    __syncthreads();
    for (unsigned stride = BlockSize / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) block_sums[blockIdx.x] = s[0];
}

TEST(Reduction, SharedMemoryTreeOver2To20) {
    const auto host = small_integer_floats();
    const int blocks = kN / (2 * kThreads);
    DeviceBuffer<float> in(kN), sums(blocks);
    ASSERT_CUDA_OK(in.status());
    ASSERT_CUDA_OK(sums.status());
    ASSERT_CUDA_OK(in.upload(host));
    reduce_smem<kThreads><<<blocks, kThreads>>>(in.get(), sums.get(), kN);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto partial = download_ok(sums);
    ASSERT_EQ(partial.size(), size_t(blocks));
    // Each block's partial must be exact too, not only the total.
    for (int b = 0; b < blocks; ++b) {
        double expect = 0;
        for (int k = 0; k < 2 * kThreads; ++k) expect += host[b * 2 * kThreads + k];
        ASSERT_EQ(partial[b], expect) << "block " << b;
    }
    double total = 0;
    for (float p : partial) total += p;
    EXPECT_EQ(total, exact_sum(host));
}

__device__ __forceinline__ int warp_sum(int v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Grid-stride loads, warp shuffles, one shared slot per warp, and one atomic per block.
__global__ void reduce_shfl(const int* in, int n, unsigned long long* total) {
    __shared__ int warp_sums[32];
    int v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
    v = warp_sum(v);
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0;
        v = warp_sum(v);
        if (lane == 0) atomicAdd(total, static_cast<unsigned long long>(v));
    }
}

TEST(Reduction, WarpShuffleOver2To20) {
    std::vector<int> host(kN);
    long long expect = 0;
    for (int i = 0; i < kN; ++i) {
        host[i] = static_cast<int>((static_cast<uint32_t>(i) * 2246822519u) % 1001u);
        expect += host[i];
    }
    DeviceBuffer<int> in(kN);
    DeviceBuffer<unsigned long long> total(1);
    ASSERT_CUDA_OK(in.status());
    ASSERT_CUDA_OK(total.status());
    ASSERT_CUDA_OK(in.upload(host));
    for (int blocks : {kN / kThreads, 333}) {  // one element per thread, and a grid-stride loop
        SCOPED_TRACE(::testing::Message() << blocks << " blocks");
        ASSERT_CUDA_OK(total.fill_bytes(0));
        reduce_shfl<<<blocks, kThreads>>>(in.get(), kN, total.get());
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto got = download_ok(total);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0], static_cast<unsigned long long>(expect));
    }
}

// Single pass: each block stores its partial sum, fences, and takes a ticket; the block that
// draws the last ticket sums all partials (CUDA programming guide, __threadfence example).
__device__ unsigned int blocks_done = 0;

__global__ void reduce_last_block(const float* in, int n, volatile float* partial, float* result) {
    __shared__ float s[256];
    __shared__ bool is_last;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();  // the partial is visible to every block before the ticket is
        const unsigned ticket = atomicInc(&blocks_done, gridDim.x);
        is_last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last) {
        float sum = 0.0f;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) sum += partial[b];
        s[threadIdx.x] = sum;
        __syncthreads();
        for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            *result = s[0];
            blocks_done = 0;  // ready for the next launch
        }
    }
}

TEST(Reduction, LastBlockFinishesAfterThreadfence) {
    const auto host = small_integer_floats();
    constexpr int kBlocks = 512;
    DeviceBuffer<float> in(kN), partial(kBlocks), result(1);
    ASSERT_CUDA_OK(in.status());
    ASSERT_CUDA_OK(partial.status());
    ASSERT_CUDA_OK(result.status());
    ASSERT_CUDA_OK(in.upload(host));
    for (int rep = 0; rep < 3; ++rep) {
        ASSERT_CUDA_OK(result.fill_bytes(0xff));  // NaN until the last block writes
        reduce_last_block<<<kBlocks, 256>>>(in.get(), kN, partial.get(), result.get());
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto got = download_ok(result);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0], exact_sum(host)) << "repetition " << rep;
    }
}
