// Simulator speed: simulated CUDA threads per second, beside the same computation as a plain CPU
// loop in the same run, and the cost of cusim analysis on the same kernel. Prints one line per case:
//   case=NAME sim_threads_per_s=N sim_time_s=T sim_cpu_s=C loop_time_s=T
//   case=NAME mode=MODE sim_time_s=T plain_time_s=T overhead=R
// Times are medians of several repetitions (argument 1, default 5) after a warm-up run. sim_cpu_s
// is the process's CPU time (all worker threads) for one run: on a machine that other work loads,
// it moves far less than the wall time, so two builds compare better by it.
//   bench_cusim [REPS [LOG2_N [CASES]]]
// LOG2_N (default 24) sets the problem size (2^LOG2_N threads; small sizes suit callgrind).
// CASES picks what runs: `reduce`, `analysis`, `saxpy`, or `plain` (reduce and saxpy, to compare
// two builds of cusim quickly); default all three.
#include <cuda_runtime.h>
#include <cusim/analysis.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
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

double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Medians {
    double wall, cpu;  // seconds, each the median over the repetitions
};

Medians median_times(int reps, const std::function<void()>& f) {
    std::vector<double> wall, cpu;
    f();  // warm-up: fiber pools, page faults
    for (int r = 0; r < reps; ++r) {
        const double c = cpu_seconds();
        const auto a = std::chrono::steady_clock::now();
        f();
        const auto b = std::chrono::steady_clock::now();
        cpu.push_back(cpu_seconds() - c);
        wall.push_back(std::chrono::duration<double>(b - a).count());
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

double median_seconds(int reps, const std::function<void()>& f) { return median_times(reps, f).wall; }

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "bench_cusim: %s failed: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    const int log2_n = argc > 2 ? std::clamp(std::atoi(argv[2]), 8, 28) : 24;
    const std::string cases = argc > 3 ? argv[3] : "reduce,analysis,saxpy";
    auto runs = [&](const char* c) { return cases == "plain" ? std::string(c) != "analysis" : cases.find(c) != std::string::npos; };
    const int n = 1 << log2_n;
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

    // reduce_smem: 3 block barriers per thread, 5 shuffles in the first warp. The plain loop also
    // gives the sums the analysis cases are verified against.
    const double loop = median_seconds(reps, [&] {
        for (int b = 0; b < blocks; ++b) {
            float s = 0.0f;
            for (int t = 0; t < kBlock; ++t) s += hx[b * kBlock + t];
            loop_partial[b] = s;
        }
    });
    if (runs("reduce")) {
        const Medians sim = median_times(reps, [&] { check(plain::run_reduce(x, partial, n), "reduce_smem"); });
        verify("reduce_smem");
        std::printf("case=reduce_smem_2^%d sim_threads_per_s=%.0f sim_time_s=%.4f sim_cpu_s=%.4f loop_time_s=%.4f\n",
                    log2_n, static_cast<double>(blocks) * kBlock / sim.wall, sim.wall, sim.cpu, loop);
        std::fflush(stdout);
    }

    // The same kernel with analysis instrumentation, per tool selection.
    if (runs("analysis") && cusim::analysis::available()) {
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
            std::printf("case=reduce_smem_2^%d mode=%s sim_time_s=%.4f plain_time_s=%.4f overhead=%.2f\n", log2_n, m.mode,
                        t, plain_again, t / plain_again);
            std::fflush(stdout);
        }
    }

    // saxpy: no barrier.
    if (runs("saxpy")) {
        std::vector<float> ly(hy);
        const Medians sim = median_times(reps, [&] { check(plain::run_saxpy(n, 1.0f, x, y), "saxpy"); });
        const double loop_saxpy = median_seconds(reps, [&] {
            float* yy = ly.data();
            const float* xx = hx.data();
            for (int i = 0; i < n; ++i) yy[i] = 1.0f * xx[i] + yy[i];
        });
        std::printf("case=saxpy_2^%d sim_threads_per_s=%.0f sim_time_s=%.4f sim_cpu_s=%.4f loop_time_s=%.4f\n", log2_n,
                    static_cast<double>(n) / sim.wall, sim.wall, sim.cpu, loop_saxpy);
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(partial);
    return 0;
}
