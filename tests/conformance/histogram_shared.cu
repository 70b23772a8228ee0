// A 256-bin byte histogram as NVIDIA's histogram256 sample structures it: each block counts into a
// private __shared__ histogram with shared-memory atomicAdd (four bytes per load, as one unsigned
// int), then merges it into the global one with one atomicAdd per bin. The input comes from a
// fixed linear congruential generator, skewed so that the atomics collide.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}

#define HISTOGRAM256_BIN_COUNT 256

__global__ void histogram256Kernel(unsigned int* d_Histogram, const unsigned int* d_Data, unsigned int dataCount) {
    __shared__ unsigned int s_Hist[HISTOGRAM256_BIN_COUNT];
    for (unsigned int bin = threadIdx.x; bin < HISTOGRAM256_BIN_COUNT; bin += blockDim.x) s_Hist[bin] = 0;
    __syncthreads();
    for (unsigned int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < dataCount; pos += blockDim.x * gridDim.x) {
        const unsigned int data = d_Data[pos];
        atomicAdd(&s_Hist[(data >> 0) & 0xFFU], 1);
        atomicAdd(&s_Hist[(data >> 8) & 0xFFU], 1);
        atomicAdd(&s_Hist[(data >> 16) & 0xFFU], 1);
        atomicAdd(&s_Hist[(data >> 24) & 0xFFU], 1);
    }
    __syncthreads();
    for (unsigned int bin = threadIdx.x; bin < HISTOGRAM256_BIN_COUNT; bin += blockDim.x)
        if (s_Hist[bin]) atomicAdd(&d_Histogram[bin], s_Hist[bin]);
}

int main() {
    const unsigned int byteCount = 1 << 18;
    const unsigned int wordCount = byteCount / 4;
    unsigned char* h_Data = (unsigned char*)malloc(byteCount);
    unsigned int seed = 2024;
    for (unsigned int i = 0; i < byteCount; ++i) {
        seed = seed * 1664525u + 1013904223u;
        // Skewed on purpose: low bins are hit far more often, so the atomics collide.
        h_Data[i] = (unsigned char)((seed >> 24) & ((seed >> 8) & 1 ? 0xFF : 0x0F));
    }
    unsigned int *d_Data, *d_Histogram;
    checkCudaErrors(cudaMalloc((void**)&d_Data, byteCount));
    checkCudaErrors(cudaMalloc((void**)&d_Histogram, HISTOGRAM256_BIN_COUNT * sizeof(unsigned int)));
    checkCudaErrors(cudaMemcpy(d_Data, h_Data, byteCount, cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemset(d_Histogram, 0, HISTOGRAM256_BIN_COUNT * sizeof(unsigned int)));
    printf("histogram256: %u bytes, 64 blocks of 192 threads\n", byteCount);
    histogram256Kernel<<<64, 192>>>(d_Histogram, d_Data, wordCount);
    checkCudaErrors(cudaGetLastError());
    unsigned int h_Histogram[HISTOGRAM256_BIN_COUNT];
    checkCudaErrors(cudaMemcpy(h_Histogram, d_Histogram, sizeof(h_Histogram), cudaMemcpyDeviceToHost));

    unsigned int ref[HISTOGRAM256_BIN_COUNT] = {0};
    for (unsigned int i = 0; i < byteCount; ++i) ref[h_Data[i]]++;
    unsigned int total = 0, wrong = 0, maxBin = 0;
    for (int b = 0; b < HISTOGRAM256_BIN_COUNT; ++b) {
        total += h_Histogram[b];
        wrong += h_Histogram[b] != ref[b];
        if (h_Histogram[b] > h_Histogram[maxBin]) maxBin = b;
    }
    printf("total %u, bin[0] %u, bin[15] %u, bin[16] %u, bin[255] %u, fullest bin %u (%u)\n", total, h_Histogram[0],
           h_Histogram[15], h_Histogram[16], h_Histogram[255], maxBin, h_Histogram[maxBin]);
    printf("%u bins differ from the CPU histogram\n", wrong);
    checkCudaErrors(cudaFree(d_Data));
    checkCudaErrors(cudaFree(d_Histogram));
    free(h_Data);
    const bool ok = wrong == 0 && total == byteCount;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
