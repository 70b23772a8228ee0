// Split arrive/wait barriers and asynchronous copies, as CUDA 11+ code writes them (NVIDIA's
// simpleAWBarrier, globalToShmemAsyncCopy, the *TensorCoreGemm samples): cuda::barrier with
// arrive/wait, arrive_and_wait, arrive_and_drop and a completion function; cuda::memcpy_async into
// a thread-scope pipeline (multi-stage, pipeline_consumer_wait_prior), into a block-scope pipeline
// with producer and consumer roles, and into a barrier's phase; cooperative_groups::memcpy_async
// with cg::wait; the __pipeline_memcpy_async primitive with zero fill.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <utility>

namespace cg = cooperative_groups;

// libcu++'s barrier has a constructor, so nvcc warns about a __shared__ one; NVIDIA's samples
// silence the warning this way (the barrier is initialized with init(), by one thread).
#pragma nv_diag_suppress static_var_with_dynamic_init

#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            std::printf("%s failed: %s\n", #call, cudaGetErrorString(e_));                  \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

// Each warp sums its values; warp 0 waits for the other warps' sums through a split barrier
// (arrive, independent work, wait), then adds them. The completion function counts phases.
struct CountPhases {
    int* phases;
    __device__ void operator()() noexcept { ++*phases; }
};
__global__ void barrier_sum(const int* in, int* out, int* phases_out) {
    __shared__ int partial[8];
    __shared__ int phases;
    __shared__ cuda::barrier<cuda::thread_scope_block, CountPhases> bar;
    if (threadIdx.x == 0) {
        phases = 0;
        init(&bar, blockDim.x, CountPhases{&phases});
    }
    __syncthreads();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) partial[warp] = v;
    auto token = bar.arrive();
    int own = v * 2;  // work between the arrival and the wait
    bar.wait(std::move(token));
    if (threadIdx.x == 0) {
        int s = 0;
        for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) s += partial[w];
        out[blockIdx.x] = s + own - own;
    }
    bar.arrive_and_wait();  // a second phase
    if (threadIdx.x == 0) phases_out[blockIdx.x] = phases;
}

// Half the threads leave the barrier after the first phase: the second phase waits for the rest.
__global__ void barrier_drop(int* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ int count;
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        count = 0;
    }
    __syncthreads();
    atomicAdd(&count, 1);
    if (threadIdx.x % 2) {
        bar.arrive_and_drop();
        return;
    }
    bar.arrive_and_wait();
    atomicAdd(&count, 10);
    bar.arrive_and_wait();
    if (threadIdx.x == 0) *out = count;
}

// A 4-stage thread-scope pipeline: each thread streams its row of `in` through shared memory,
// 4 elements per stage, keeping up to three stages in flight.
constexpr int kStages = 4;
__global__ void pipeline_rows(const float4* in, float* out, int chunks) {
    __shared__ alignas(16) float4 buf[kStages][64];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    const auto shape = cuda::aligned_size_t<alignof(float4)>(sizeof(float4));
    const float4* row = in + threadIdx.x * chunks;
    float sum = 0;
    int issued = 0;
    for (; issued < kStages - 1; ++issued) {
        pipe.producer_acquire();
        if (issued < chunks) cuda::memcpy_async(&buf[issued % kStages][threadIdx.x], &row[issued], shape, pipe);
        pipe.producer_commit();
    }
    for (int c = 0; c < chunks; ++c) {
        // A stage is committed every iteration, empty at the end, so that "all but the last
        // kStages - 1 stages" is always the stage read next.
        pipe.producer_acquire();
        if (issued < chunks) {
            cuda::memcpy_async(&buf[issued % kStages][threadIdx.x], &row[issued], shape, pipe);
            ++issued;
        }
        pipe.producer_commit();
        cuda::pipeline_consumer_wait_prior<kStages - 1>(pipe);
        const float4 v = buf[c % kStages][threadIdx.x];
        sum += v.x + v.y + v.z + v.w;
        pipe.consumer_release();
    }
    out[threadIdx.x] = sum;
}

// consumer_wait() waits for the oldest committed stage only: the stage committed after it may
// still be in flight, so the thread reads the stage it waited for.
__global__ void pipeline_consumer_wait(const int* in, int* out) {
    __shared__ int a[32], b[32];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&a[threadIdx.x], &in[threadIdx.x], sizeof(int), pipe);
    pipe.producer_commit();
    pipe.producer_acquire();
    cuda::memcpy_async(&b[threadIdx.x], &in[32 + threadIdx.x], sizeof(int), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    const int first = a[threadIdx.x];
    pipe.consumer_release();
    pipe.consumer_wait();
    out[threadIdx.x] = first * 100 + b[threadIdx.x];
    pipe.consumer_release();
}

// A block-scope pipeline in shared state: warp 1 produces (copies each stage in), warp 0 consumes
// (sums it), through 2 stages for 6 chunks of 32 ints.
__global__ void pipeline_roles(const int* in, int* out) {
    constexpr int stages = 2, chunks = 6;
    __shared__ int buf[stages][32];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    auto block = cg::this_thread_block();
    const auto role = threadIdx.x >= 32 ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
    auto pipe = cuda::make_pipeline(block, &state, role);
    int sum = 0;
    for (int c = 0; c < chunks; ++c) {
        if (role == cuda::pipeline_role::producer) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[c % stages][threadIdx.x - 32], &in[c * 32 + threadIdx.x - 32], sizeof(int), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            sum += buf[c % stages][threadIdx.x] * (c + 1);
            pipe.consumer_release();
        }
    }
    if (threadIdx.x < 32) out[threadIdx.x] = sum;
}

// cooperative_groups::memcpy_async: the block copies 1000 ints (not a multiple of the block) in;
// a warp copies 64 doubles with an aligned size; cg::wait makes them visible to every thread.
__global__ void cg_copies(const int* in, const double* din, long long* out) {
    __shared__ int s[1000];
    __shared__ alignas(16) double d[64];
    auto block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    cg::memcpy_async(block, s, in, sizeof(int) * 1000);
    if (warp.meta_group_rank() == 1)
        cg::memcpy_async(warp, d, din, cuda::aligned_size_t<16>(sizeof(double) * 64));
    cg::wait(block);
    long long acc = 0;
    for (int i = threadIdx.x; i < 1000; i += blockDim.x) acc += s[i] * (i % 7);
    for (int i = threadIdx.x; i < 64; i += blockDim.x) acc += static_cast<long long>(d[i]);
    atomicAdd(reinterpret_cast<unsigned long long*>(out), static_cast<unsigned long long>(acc));
}

// cuda::memcpy_async into a barrier's phase: the copy is complete once the phase is.
__global__ void barrier_copy(const float* in, float* out) {
    __shared__ float s[128];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float), bar);
    bar.arrive_and_wait();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 128] - s[threadIdx.x];
}

// __pipeline_memcpy_async with zero fill: 16 bytes asked, the last 8 zero-filled.
__global__ void primitives(const int4* in, int4* out) {
    __shared__ int4 s[32];
    __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(int4), threadIdx.x % 2 ? 8 : 0);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[threadIdx.x] = s[threadIdx.x];
}

int main() {
    // barrier_sum: 2 blocks of 256 ints, the value i % 13.
    int h_in[512];
    for (int i = 0; i < 512; ++i) h_in[i] = i % 13;
    int *d_in, *d_out, *d_phases;
    CHECK(cudaMalloc(&d_in, sizeof h_in));
    CHECK(cudaMalloc(&d_out, 64 * sizeof(int)));
    CHECK(cudaMalloc(&d_phases, 2 * sizeof(int)));
    CHECK(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    barrier_sum<<<2, 256>>>(d_in, d_out, d_phases);
    CHECK(cudaGetLastError());
    int sums[2], phases[2];
    CHECK(cudaMemcpy(sums, d_out, sizeof sums, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(phases, d_phases, sizeof phases, cudaMemcpyDeviceToHost));
    std::printf("barrier arrive/wait: block sums %d %d, phases completed %d %d\n", sums[0], sums[1], phases[0], phases[1]);

    barrier_drop<<<1, 64>>>(d_out);
    CHECK(cudaGetLastError());
    int dropped;
    CHECK(cudaMemcpy(&dropped, d_out, sizeof dropped, cudaMemcpyDeviceToHost));
    std::printf("barrier arrive_and_drop: count %d\n", dropped);

    // pipeline_rows: 64 threads, 10 chunks of float4 each.
    const int chunks = 10;
    float h_rows[64 * chunks * 4];
    for (int i = 0; i < 64 * chunks * 4; ++i) h_rows[i] = static_cast<float>(i % 17);
    float4* d_rows;
    float* d_sums;
    CHECK(cudaMalloc(&d_rows, sizeof h_rows));
    CHECK(cudaMalloc(&d_sums, 64 * sizeof(float)));
    CHECK(cudaMemcpy(d_rows, h_rows, sizeof h_rows, cudaMemcpyHostToDevice));
    pipeline_rows<<<1, 64>>>(d_rows, d_sums, chunks);
    CHECK(cudaGetLastError());
    float h_sums[64];
    CHECK(cudaMemcpy(h_sums, d_sums, sizeof h_sums, cudaMemcpyDeviceToHost));
    float total = 0;
    for (float v : h_sums) total += v;
    std::printf("thread-scope pipeline, 4 stages: row 0 sum %.0f, row 63 sum %.0f, total %.0f\n", h_sums[0], h_sums[63], total);

    pipeline_consumer_wait<<<1, 32>>>(d_in, d_out);
    CHECK(cudaGetLastError());
    int waited[32];
    CHECK(cudaMemcpy(waited, d_out, sizeof waited, cudaMemcpyDeviceToHost));
    std::printf("consumer_wait, two stages: lane 0 %d, lane 31 %d\n", waited[0], waited[31]);

    pipeline_roles<<<1, 64>>>(d_in, d_out);
    CHECK(cudaGetLastError());
    int roles[32];
    CHECK(cudaMemcpy(roles, d_out, sizeof roles, cudaMemcpyDeviceToHost));
    long long roles_total = 0;
    for (int v : roles) roles_total += v;
    std::printf("block-scope pipeline, producer and consumer warps: lane 0 %d, lane 31 %d, total %lld\n", roles[0],
                roles[31], roles_total);

    double h_d[64];
    for (int i = 0; i < 64; ++i) h_d[i] = i * 3;
    int h_big[1000];
    for (int i = 0; i < 1000; ++i) h_big[i] = i;
    int* d_big;
    double* d_d;
    long long* d_acc;
    CHECK(cudaMalloc(&d_big, sizeof h_big));
    CHECK(cudaMalloc(&d_d, sizeof h_d));
    CHECK(cudaMalloc(&d_acc, sizeof(long long)));
    CHECK(cudaMemcpy(d_big, h_big, sizeof h_big, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_d, h_d, sizeof h_d, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_acc, 0, sizeof(long long)));
    cg_copies<<<1, 96>>>(d_big, d_d, d_acc);
    CHECK(cudaGetLastError());
    long long acc;
    CHECK(cudaMemcpy(&acc, d_acc, sizeof acc, cudaMemcpyDeviceToHost));
    std::printf("cooperative_groups::memcpy_async and cg::wait: %lld\n", acc);

    float h_f[128];
    for (int i = 0; i < 128; ++i) h_f[i] = static_cast<float>(i * i);
    float *d_f, *d_fo;
    CHECK(cudaMalloc(&d_f, sizeof h_f));
    CHECK(cudaMalloc(&d_fo, sizeof h_f));
    CHECK(cudaMemcpy(d_f, h_f, sizeof h_f, cudaMemcpyHostToDevice));
    barrier_copy<<<1, 128>>>(d_f, d_fo);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_f, d_fo, sizeof h_f, cudaMemcpyDeviceToHost));
    std::printf("memcpy_async into a barrier phase: %.0f %.0f %.0f\n", h_f[0], h_f[1], h_f[127]);

    int4 h_i4[32];
    for (int i = 0; i < 32; ++i) h_i4[i] = make_int4(i, i + 1, i + 2, i + 3);
    int4 *d_i4, *d_o4;
    CHECK(cudaMalloc(&d_i4, sizeof h_i4));
    CHECK(cudaMalloc(&d_o4, sizeof h_i4));
    CHECK(cudaMemcpy(d_i4, h_i4, sizeof h_i4, cudaMemcpyHostToDevice));
    primitives<<<1, 32>>>(d_i4, d_o4);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h_i4, d_o4, sizeof h_i4, cudaMemcpyDeviceToHost));
    std::printf("__pipeline_memcpy_async with zero fill: (%d %d %d %d) (%d %d %d %d)\n", h_i4[2].x, h_i4[2].y, h_i4[2].z,
                h_i4[2].w, h_i4[3].x, h_i4[3].y, h_i4[3].z, h_i4[3].w);
    CHECK(cudaDeviceSynchronize());
    return 0;
}
