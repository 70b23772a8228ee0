// clock() in device code is the SM's cycle counter, at the rate cudaDevAttrClockRate reports (kHz),
// as NVIDIA's simpleHyperQ and graphMemoryFootprint spin on it: a kernel that spins for 20 ms of
// cycles takes about 20 ms, not the C library's processor time in microseconds (about 20 s).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <ctime>

__global__ void spin(clock_t cycles, long long* spun) {
    const clock_t start = clock();
    clock_t now = start;
    while (now - start < cycles) now = clock();
    *spun = static_cast<long long>(now - start);
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
    const auto t0 = std::chrono::steady_clock::now();
    spin<<<1, 1>>>(cycles, d_spun);
    const cudaError_t err = cudaDeviceSynchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long long spun = 0;
    cudaMemcpy(&spun, d_spun, sizeof spun, cudaMemcpyDeviceToHost);
    std::printf("spin kernel: %s\n", cudaGetErrorString(err));
    std::printf("clock() advanced by at least 20 ms of cycles: %s\n", spun >= cycles ? "yes" : "no");
    // A GPU's boost clock may run below its maximum rate, so the spin may take a little longer
    // than 20 ms; far less than a second either way.
    std::printf("the spin took less than a second: %s\n", seconds < 1.0 ? "yes" : "no");
    cudaFree(d_spun);
    return 0;
}
