// Two streams, pinned host memory, asynchronous copies and kernels, events between streams.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t err_ = (call);                                                               \
        if (err_ != cudaSuccess) {                                                               \
            printf("%s failed: %s\n", #call, cudaGetErrorString(err_));                          \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

__global__ void scale(float* v, float f, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v[i] *= f;
}

int main() {
    const int n = 1 << 16, half = n / 2;
    float *h, *d;
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    for (int i = 0; i < n; ++i) h[i] = float(i % 64);
    cudaStream_t s[2];
    cudaEvent_t copied, done;
    for (auto& st : s) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&copied));
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    for (int k = 0; k < 2; ++k) {
        float* hp = h + k * half;
        float* dp = d + k * half;
        CHECK(cudaMemcpyAsync(dp, hp, half * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        if (k == 0) CHECK(cudaEventRecord(copied, s[0]));
        scale<<<32, 128, 0, s[k]>>>(dp, k == 0 ? 2.0f : 3.0f, half);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(hp, dp, half * sizeof(float), cudaMemcpyDeviceToHost, s[k]));
    }
    CHECK(cudaStreamWaitEvent(s[1], copied, 0));
    CHECK(cudaEventRecord(done, s[1]));
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaStreamSynchronize(s[0]));
    printf("event query after sync: %s\n", cudaGetErrorName(cudaEventQuery(done)));
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += h[i];
    printf("h[1] = %.0f, h[%d] = %.0f, sum = %.0f\n", h[1], half + 1, h[half + 1], sum);
    float ms = -1;
    cudaEventElapsedTime(&ms, copied, copied);
    printf("elapsed time is %s\n", ms >= 0 ? "non-negative" : "negative");
    for (auto& st : s) CHECK(cudaStreamDestroy(st));
    CHECK(cudaEventDestroy(copied));
    CHECK(cudaEventDestroy(done));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    return sum == 5.0 * 512 * 2016 ? 0 : 1;
}
