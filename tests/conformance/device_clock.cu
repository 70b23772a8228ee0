// clock() and clock64() in device code are the SM's cycle counter, at the rate
// cudaDevAttrClockRate reports (kHz), as NVIDIA's simpleHyperQ and graphMemoryFootprint spin on
// clock(): both read the same counter, so they advance together (clock() is not the C library's
// processor time in microseconds, and clock64() not nanoseconds).
#include <cuda_runtime.h>

#include <cstdio>
#include <ctime>

__global__ void spin(clock_t cycles, long long* spun) {
    const clock_t start = clock();
    clock_t now = start;
    while (now - start < cycles) now = clock();
    *spun = static_cast<long long>(now - start);
}

// Spins on clock64(); also reports how far clock() went meanwhile (the same SM counter on a GPU:
// clock() is its low bits), in spun[1], and clock64()'s advance in spun[0].
__global__ void spin64(long long cycles, long long* spun) {
    const clock_t start32 = clock();
    const long long start = clock64();
    long long now = start;
    while (now - start < cycles) now = clock64();
    const clock_t end32 = clock();
    spun[0] = now - start;
    spun[1] = static_cast<long long>(static_cast<unsigned>(end32 - start32));
}

// Runs @p launch, a spin for @p cycles (20 ms at the reported rate); prints whether the clock
// advanced that far.
template <class Launch>
int run_spin(const char* name, long long cycles, long long* d_spun, Launch launch) {
    launch();
    const cudaError_t err = cudaDeviceSynchronize();
    long long spun = 0;
    cudaMemcpy(&spun, d_spun, sizeof spun, cudaMemcpyDeviceToHost);
    std::printf("%s kernel: %s\n", name, cudaGetErrorString(err));
    std::printf("%s advanced by at least 20 ms of cycles: %s\n", name, spun >= cycles ? "yes" : "no");
    return err == cudaSuccess ? 0 : 1;
}

int main() {
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess || khz <= 0) {
        std::printf("cudaDevAttrClockRate: no clock rate\n");
        return 1;
    }
    const clock_t cycles = static_cast<clock_t>(20) * khz;  // 20 ms at the reported rate
    long long* d_spun;
    cudaMalloc(&d_spun, sizeof(long long));
    int failed = run_spin("clock()", cycles, d_spun, [&] { spin<<<1, 1>>>(cycles, d_spun); });
    long long* d_both;
    cudaMalloc(&d_both, 2 * sizeof(long long));
    failed += run_spin("clock64()", cycles, d_both, [&] { spin64<<<1, 1>>>(cycles, d_both); });
    long long both[2] = {0, 0};
    cudaMemcpy(both, d_both, sizeof both, cudaMemcpyDeviceToHost);
    // The 20 ms spin is about 40 M cycles: well inside clock()'s 32 bits.
    const double ratio = both[0] > 0 ? static_cast<double>(both[1]) / static_cast<double>(both[0]) : 0.0;
    std::printf("clock() and clock64() count the same cycles: %s\n", ratio > 0.99 && ratio < 1.01 ? "yes" : "no");
    cudaFree(d_both);
    cudaFree(d_spun);
    return failed;
}
