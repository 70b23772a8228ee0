// Simulator speed: simulated CUDA threads per second, beside the same computation as a plain CPU
// loop in the same run, and the cost of cusim analysis on the same kernel. Prints one line per case:
//   case=NAME sim_threads_per_s=N sim_time_s=T loop_time_s=T
//   case=NAME mode=MODE sim_time_s=T plain_time_s=T overhead=R
// Times are medians of several repetitions (argument 1, default 5) after a warm-up run.
#include <cuda_runtime.h>
#include <cusim/analysis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace plain {
cudaError_t run_reduce(const float* in, float* out, int n);
cudaError_t run_saxpy(int n, float a, const float* x, float* y);
}  // namespace plain
namespace instrumented {
cudaError_t run_reduce(const float* in, float* out, int n);
}  // namespace instrumented

namespace {

constexpr int kBlock = 256;

double median_seconds(int reps, const std::function<void()>& f) {
    std::vector<double> t;
    f();  // warm-up: fiber pools, page faults
    for (int r = 0; r < reps; ++r) {
        const auto a = std::chrono::steady_clock::now();
        f();
        const auto b = std::chrono::steady_clock::now();
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
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    const int n = 1 << 24;
    const int blocks = (n + kBlock - 1) / kBlock;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) {  // integer values: float sums are exact in any order
        hx[i] = static_cast<float>(i % 7);
        hy[i] = static_cast<float>(i % 5);
    }
    float *x, *y, *partial;
    check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&partial, blocks * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");

    std::vector<float> loop_partial(blocks), got(blocks);
    auto verify = [&](const char* what) {
        check(cudaMemcpy(got.data(), partial, blocks * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
        for (int b = 0; b < blocks; ++b)
            if (got[b] != loop_partial[b]) {
                std::fprintf(stderr, "bench_cusim: %s: block %d sum %f, expected %f\n", what, b, got[b], loop_partial[b]);
                std::exit(1);
            }
    };

    // reduce_smem: 3 block barriers per thread, 5 shuffles in the first warp.
    const double loop = median_seconds(reps, [&] {
        for (int b = 0; b < blocks; ++b) {
            float s = 0.0f;
            for (int t = 0; t < kBlock; ++t) s += hx[b * kBlock + t];
            loop_partial[b] = s;
        }
    });
    const double sim = median_seconds(reps, [&] { check(plain::run_reduce(x, partial, n), "reduce_smem"); });
    verify("reduce_smem");
    std::printf("case=reduce_smem_2^24 sim_threads_per_s=%.0f sim_time_s=%.4f loop_time_s=%.4f\n",
                static_cast<double>(blocks) * kBlock / sim, sim, loop);
    std::fflush(stdout);

    // The same kernel with analysis instrumentation, per tool selection.
    if (cusim::analysis::available()) {
        const struct {
            const char* mode;
            const char* tools;
        } modes[] = {{"metrics", "none"}, {"memcheck", "memcheck"}, {"racecheck", "racecheck"}, {"all", "all"}};
        for (const auto& m : modes) {
            cusim::analysis::set_tools(m.tools);
            cusim::analysis::reset();
            const double t = median_seconds(reps, [&] { check(instrumented::run_reduce(x, partial, n), m.mode); });
            verify(m.mode);
            const double plain_again = median_seconds(reps, [&] { check(plain::run_reduce(x, partial, n), "plain"); });
            if (!cusim::analysis::reports().empty()) {
                std::fprintf(stderr, "bench_cusim: analysis mode %s reported errors on a correct kernel\n", m.mode);
                return 1;
            }
            std::printf("case=reduce_smem_2^24 mode=%s sim_time_s=%.4f plain_time_s=%.4f overhead=%.2f\n", m.mode, t,
                        plain_again, t / plain_again);
            std::fflush(stdout);
        }
    }

    // saxpy: no barrier.
    std::vector<float> ly(hy);
    const double sim_saxpy = median_seconds(reps, [&] { check(plain::run_saxpy(n, 1.0f, x, y), "saxpy"); });
    const double loop_saxpy = median_seconds(reps, [&] {
        float* yy = ly.data();
        const float* xx = hx.data();
        for (int i = 0; i < n; ++i) yy[i] = 1.0f * xx[i] + yy[i];
    });
    std::printf("case=saxpy_2^24 sim_threads_per_s=%.0f sim_time_s=%.4f loop_time_s=%.4f\n",
                static_cast<double>(n) / sim_saxpy, sim_saxpy, loop_saxpy);
    cudaFree(x);
    cudaFree(y);
    cudaFree(partial);
    return 0;
}
