// Simulator speed: simulated CUDA threads per second on the CPU, beside the same computation as a
// plain CPU loop in the same run. Prints one line per case:
//   case=NAME sim_threads_per_s=N sim_time_s=T loop_time_s=T
// Times are medians of several repetitions. Built for the sim backend only.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

constexpr int kBlock = 256;

__global__ void reduce_smem(const float* in, float* out, int n) {
    __shared__ float s[kBlock];
    const unsigned t = threadIdx.x;
    const unsigned i = blockIdx.x * kBlock + t;
    s[t] = i < static_cast<unsigned>(n) ? in[i] : 0.0f;
    __syncthreads();
    // Tree levels down to 64 partial sums, then the first warp finishes with shuffles (the
    // classic reduction of the CUDA samples: no barrier is needed once one warp is left).
    for (unsigned stride = kBlock / 2; stride > 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        float v = s[t] + s[t + 32];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (t == 0) out[blockIdx.x] = v;
    }
}

__global__ void saxpy(int n, float a, const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

double median_seconds(int reps, const std::function<void()>& f) {
    std::vector<double> t;
    f();  // warm-up: pools, page faults
    for (int r = 0; r < reps; ++r) {
        auto a = std::chrono::steady_clock::now();
        f();
        auto b = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "bench_cusim: %s failed: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
    const int n = 1 << 24;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) {
        hx[i] = static_cast<float>(i % 7);
        hy[i] = static_cast<float>(i % 5);
    }
    float *x, *y, *partial;
    const int blocks = (n + kBlock - 1) / kBlock;
    check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&partial, blocks * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");

    {  // reduce_smem: every thread crosses 3 block barriers; warp 0 also 5 shuffles.
        std::vector<float> loop_partial(blocks);
        const double sim = median_seconds(reps, [&] {
            reduce_smem<<<blocks, kBlock>>>(x, partial, n);
            check(cudaGetLastError(), "reduce_smem launch");
        });
        const double loop = median_seconds(reps, [&] {
            for (int b = 0; b < blocks; ++b) {
                float s = 0.0f;
                for (int t = 0; t < kBlock; ++t) s += hx[b * kBlock + t];
                loop_partial[b] = s;
            }
        });
        std::vector<float> got(blocks);
        check(cudaMemcpy(got.data(), partial, blocks * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
        for (int b = 0; b < blocks; ++b)
            if (got[b] != loop_partial[b]) {  // integer-valued inputs: exact in any order
                std::fprintf(stderr, "bench_cusim: reduce_smem mismatch at block %d: %f vs %f\n", b, got[b],
                             loop_partial[b]);
                return 1;
            }
        std::printf("case=reduce_smem_2^24 sim_threads_per_s=%.0f sim_time_s=%.4f loop_time_s=%.4f\n",
                    static_cast<double>(blocks) * kBlock / sim, sim, loop);
    }
    {  // saxpy: no barrier, one fiber runs a block's threads back to back.
        std::vector<float> ly(hy);
        const double sim = median_seconds(reps, [&] {
            saxpy<<<blocks, kBlock>>>(n, 1.0f, x, y);
            check(cudaGetLastError(), "saxpy launch");
        });
        const double loop = median_seconds(reps, [&] {
            float* yy = ly.data();
            const float* xx = hx.data();
            for (int i = 0; i < n; ++i) yy[i] = 1.0f * xx[i] + yy[i];
        });
        std::printf("case=saxpy_2^24 sim_threads_per_s=%.0f sim_time_s=%.4f loop_time_s=%.4f\n",
                    static_cast<double>(n) / sim, sim, loop);
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(partial);
    return 0;
}
