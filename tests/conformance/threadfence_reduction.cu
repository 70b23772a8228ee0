// Single-pass reduction of NVIDIA's threadFenceReduction sample: each block stores its partial sum,
// __threadfence() makes it visible, atomicInc on a __device__ counter hands out tickets, and the
// block that draws the last ticket sums the partials and resets the counter for the next launch.
// Integer-valued floats keep every sum exact in any order.
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

// Blocks that have finished their partial sum.
__device__ unsigned int retirementCount = 0;

template <unsigned int blockSize>
__device__ void reduceBlock(volatile float* sdata, float mySum, const unsigned int tid) {
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
}

template <unsigned int blockSize>
__global__ void reduceSinglePass(const float* g_idata, float* g_odata, unsigned int n) {
    __shared__ float sdata[blockSize];
    const unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    const unsigned int gridSize = blockSize * 2 * gridDim.x;
    float mySum = 0;
    while (i < n) {
        mySum += g_idata[i];
        if (i + blockSize < n) mySum += g_idata[i + blockSize];
        i += gridSize;
    }
    reduceBlock<blockSize>(sdata, mySum, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];

    if (gridDim.x > 1) {
        __shared__ bool amLast;
        // The partial sum must be visible to every block before this block takes its ticket.
        __threadfence();
        if (tid == 0) {
            unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
            amLast = (ticket == gridDim.x - 1);
        }
        __syncthreads();
        if (amLast) {
            float lastSum = 0;
            for (unsigned int k = tid; k < gridDim.x; k += blockSize) lastSum += g_odata[k];
            reduceBlock<blockSize>(sdata, lastSum, tid);
            if (tid == 0) {
                g_odata[0] = sdata[0];
                retirementCount = 0;
            }
        }
    }
}

float reduceOnDevice(const float* d_idata, float* d_odata, unsigned int n, unsigned int blocks) {
    reduceSinglePass<128><<<blocks, 128>>>(d_idata, d_odata, n);
    checkCudaErrors(cudaGetLastError());
    float result = 0;
    checkCudaErrors(cudaMemcpy(&result, d_odata, sizeof(float), cudaMemcpyDeviceToHost));
    return result;
}

int main() {
    const unsigned int n = 1 << 16;
    float* h_idata = (float*)malloc(n * sizeof(float));
    double cpu = 0;
    for (unsigned int i = 0; i < n; ++i) {
        h_idata[i] = (float)(i % 17);
        cpu += h_idata[i];
    }
    float *d_idata, *d_odata;
    checkCudaErrors(cudaMalloc((void**)&d_idata, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_odata, 64 * sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_idata, h_idata, n * sizeof(float), cudaMemcpyHostToDevice));

    bool ok = true;
    const unsigned int grids[] = {64, 7, 1, 64};
    for (unsigned int blocks : grids) {
        const float gpu = reduceOnDevice(d_idata, d_odata, n, blocks);
        printf("%2u blocks: GPU sum %.0f, CPU sum %.0f\n", blocks, gpu, cpu);
        ok = ok && gpu == cpu;
    }
    unsigned int count = 1;
    checkCudaErrors(cudaMemcpyFromSymbol(&count, retirementCount, sizeof(count)));
    printf("retirementCount after the launches: %u\n", count);
    checkCudaErrors(cudaFree(d_idata));
    checkCudaErrors(cudaFree(d_odata));
    free(h_idata);
    ok = ok && count == 0;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
