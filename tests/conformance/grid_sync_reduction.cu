// Grid-wide synchronization across many blocks (cudaLaunchCooperativeKernel + this_grid().sync()),
// written as NVIDIA's reductionMultiBlockCG sample is: the grid is sized to fill the device
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount), each block reduces a
// grid-stride slice into g_odata[blockIdx.x], grid.sync(), then one thread sums the partials.
// A second kernel runs ten phases of a neighbour exchange that crosses block boundaries, with a
// grid.sync() between phases. Integer-valued data, so every sum is exact in any order.
#include <cooperative_groups.h>
#include <cstdio>
#include <vector>
namespace cg = cooperative_groups;

__device__ void reduce_block(float* sdata, const cg::thread_block& cta) {
    const unsigned tid = cta.thread_rank();
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    float beta = sdata[tid];
    for (int i = tile32.size() / 2; i > 0; i >>= 1) {
        beta += tile32.shfl_down(beta, i);
    }
    cg::sync(cta);
    if (tile32.thread_rank() == 0) sdata[tid / 32] = beta;
    cg::sync(cta);
    if (cta.thread_rank() == 0) {
        beta = 0;
        for (unsigned i = 0; i < blockDim.x / 32; ++i) beta += sdata[i];
        sdata[0] = beta;
    }
    cg::sync(cta);
}

__global__ void reduce_single_pass_multi_block_cg(const float* g_idata, float* g_odata, unsigned n) {
    cg::thread_block block = cg::this_thread_block();
    cg::grid_group grid = cg::this_grid();
    extern __shared__ float sdata[];
    float sum = 0;
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) sum += g_idata[i];
    sdata[block.thread_rank()] = sum;
    reduce_block(sdata, block);
    if (block.thread_rank() == 0) g_odata[blockIdx.x] = sdata[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        for (unsigned b = 1; b < gridDim.x; ++b) g_odata[0] += g_odata[b];
    }
}

// Each phase: next[i] = cur[i - 1] + cur[i + 1] (cyclic), read across block boundaries.
__global__ void neighbour_phases(int* a, int* b, int n, int phases) {
    cg::grid_group grid = cg::this_grid();
    int* cur = a;
    int* next = b;
    for (int p = 0; p < phases; ++p) {
        for (long long i = grid.thread_rank(); i < n; i += grid.size())
            next[i] = (cur[(i + n - 1) % n] + cur[(i + 1) % n]) % 1000003;
        grid.sync();
        int* t = cur;
        cur = next;
        next = t;
    }
}

// What a block sees of the grid group.
__global__ void grid_ranks(unsigned long long* rank_sum, int* bad) {
    cg::grid_group grid = cg::this_grid();
    if (!grid.is_valid()) atomicAdd(bad, 1);
    if (grid.size() != 1ull * gridDim.x * gridDim.y * blockDim.x * blockDim.y) atomicAdd(bad, 1);
    if (grid.num_blocks() != 1ull * gridDim.x * gridDim.y) atomicAdd(bad, 1);
    if (grid.block_rank() != blockIdx.x + 1ull * gridDim.x * blockIdx.y) atomicAdd(bad, 1);
    const unsigned long long block_threads = blockDim.x * blockDim.y;
    if (grid.thread_rank() != grid.block_rank() * block_threads + threadIdx.x + blockDim.x * threadIdx.y)
        atomicAdd(bad, 1);
    atomicAdd(rank_sum, grid.thread_rank());
    grid.sync();
}

int main() {
    int dev = 0;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const int threads = 256;
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_single_pass_multi_block_cg, threads,
                                                  threads * sizeof(float));
    const int blocks = per_sm * prop.multiProcessorCount;
    printf("grid fills the device: %s\n", blocks >= prop.multiProcessorCount ? "yes" : "no");

    const unsigned n = 1u << 18;  // the sum stays below 2^24: exact in float
    std::vector<float> h(n);
    double expect = 0;
    for (unsigned i = 0; i < n; ++i) {
        h[i] = float(i % 97);
        expect += h[i];
    }
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, blocks * sizeof(float));
    cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    unsigned nn = n;
    void* args[] = {&in, &out, &nn};
    cudaError_t err = cudaLaunchCooperativeKernel((void*)reduce_single_pass_multi_block_cg, dim3(blocks),
                                                  dim3(threads), args, threads * sizeof(float), 0);
    printf("reduce launch: %s\n", cudaGetErrorName(err));
    float sum = 0;
    cudaMemcpy(&sum, out, sizeof sum, cudaMemcpyDeviceToHost);
    printf("sum %.0f expected %.0f\n", sum, expect);

    // Neighbour phases on 3 x 1000 + 7 elements, a few blocks of 128 threads (not a multiple).
    const int m = 3007, phases = 10;
    std::vector<int> ha(m), ref(m), tmp(m);
    for (int i = 0; i < m; ++i) ha[i] = ref[i] = (i * 7919) % 1000;
    for (int p = 0; p < phases; ++p) {
        for (int i = 0; i < m; ++i) tmp[i] = (ref[(i + m - 1) % m] + ref[(i + 1) % m]) % 1000003;
        ref.swap(tmp);
    }
    int *a, *b;
    cudaMalloc(&a, m * sizeof(int));
    cudaMalloc(&b, m * sizeof(int));
    cudaMemcpy(a, ha.data(), m * sizeof(int), cudaMemcpyHostToDevice);
    int mm = m, pp = phases;
    void* args2[] = {&a, &b, &mm, &pp};
    err = cudaLaunchCooperativeKernel((void*)neighbour_phases, dim3(5), dim3(128), args2, 0, 0);
    printf("phases launch: %s\n", cudaGetErrorName(err));
    std::vector<int> got(m);
    cudaMemcpy(got.data(), phases % 2 ? b : a, m * sizeof(int), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < m; ++i) wrong += got[i] != ref[i];
    printf("phases: %d of %d elements wrong\n", wrong, m);

    // A 2-D grid of 2-D blocks: ranks and sizes of the grid group.
    unsigned long long* rank_sum;
    int* bad;
    cudaMalloc(&rank_sum, sizeof *rank_sum);
    cudaMalloc(&bad, sizeof *bad);
    cudaMemset(rank_sum, 0, sizeof *rank_sum);
    cudaMemset(bad, 0, sizeof *bad);
    void* args3[] = {&rank_sum, &bad};
    err = cudaLaunchCooperativeKernel((void*)grid_ranks, dim3(3, 2), dim3(16, 4), args3, 0, 0);
    unsigned long long hs = 0;
    int hb = -1;
    cudaMemcpy(&hs, rank_sum, sizeof hs, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost);
    const unsigned long long total = 3 * 2 * 16 * 4;
    printf("ranks launch: %s, rank sum %llu (expected %llu), wrong values %d\n", cudaGetErrorName(err), hs,
           total * (total - 1) / 2, hb);
    return (sum == float(expect) && wrong == 0 && hb == 0) ? 0 : 1;
}
