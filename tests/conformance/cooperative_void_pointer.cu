// The launch form of NVIDIA's samples: kernel arguments as an array of pointers and the kernel
// cast to void*, cudaLaunchCooperativeKernel((void *)kernel, dimGrid, dimBlock, kernelArgs,
// smemSize, NULL), with dynamic shared memory sized at launch; cudaLaunchKernel the same way for
// a multi-block template kernel, and a kernel pointer kept in a void* variable.
// (cusim runs grid.sync() for a grid of one block; docs/cusim.md.)
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}

// Phase 1: every block reduces its grid-stride share of squares in shared memory and writes one
// partial sum. grid.sync(). Phase 2: the grid's first thread adds the partial sums.
__global__ void sumSquaresCG(const int* g_idata, int* g_partial, long long* g_result, int n) {
    extern __shared__ int sdata[];
    cg::thread_block cta = cg::this_thread_block();
    cg::grid_group grid = cg::this_grid();
    int sum = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += g_idata[i] * g_idata[i];
    sdata[cta.thread_rank()] = sum;
    cg::sync(cta);
    for (unsigned int s = cta.size() / 2; s > 0; s >>= 1) {
        if (cta.thread_rank() < s) sdata[cta.thread_rank()] += sdata[cta.thread_rank() + s];
        cg::sync(cta);
    }
    if (cta.thread_rank() == 0) g_partial[grid.block_rank()] = sdata[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        long long total = 0;
        for (unsigned long long b = 0; b < grid.num_blocks(); ++b) total += g_partial[b];
        *g_result = total;
    }
}

template <typename T>
__global__ void scaleKernel(T* data, T factor, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) data[i] *= factor;
}

__global__ void fillKernel(int* data, int value) { data[blockIdx.x * blockDim.x + threadIdx.x] = value; }

int main() {
    int dev = 0;
    int supportsCoopLaunch = 0;
    checkCudaErrors(cudaDeviceGetAttribute(&supportsCoopLaunch, cudaDevAttrCooperativeLaunch, dev));
    if (!supportsCoopLaunch) {
        printf("Selected GPU (%d) does not support Cooperative Kernel Launch, Waiving the run\n", dev);
        exit(EXIT_SUCCESS);
    }
    const int n = 1000;
    const int numThreads = 128;
    const size_t smemSize = numThreads * sizeof(int);
    int numBlocksPerSm = 0;
    checkCudaErrors(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&numBlocksPerSm, sumSquaresCG, numThreads, smemSize));
    printf("cooperative launch supported, %s\n", numBlocksPerSm >= 1 ? "one block fits on an SM" : "no block fits");

    int* h_idata = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h_idata[i] = i % 10;
    int *d_idata, *d_partial;
    long long* d_result;
    checkCudaErrors(cudaMalloc((void**)&d_idata, n * sizeof(int)));
    checkCudaErrors(cudaMalloc((void**)&d_partial, sizeof(int)));
    checkCudaErrors(cudaMalloc((void**)&d_result, sizeof(long long)));
    checkCudaErrors(cudaMemcpy(d_idata, h_idata, n * sizeof(int), cudaMemcpyHostToDevice));

    dim3 dimBlock(numThreads, 1, 1);
    dim3 dimGrid(1, 1, 1);
    int nArg = n;
    void* kernelArgs[] = {(void*)&d_idata, (void*)&d_partial, (void*)&d_result, (void*)&nArg};
    checkCudaErrors(cudaLaunchCooperativeKernel((void*)sumSquaresCG, dimGrid, dimBlock, kernelArgs, smemSize, NULL));
    checkCudaErrors(cudaDeviceSynchronize());
    long long gpu_result = 0;
    checkCudaErrors(cudaMemcpy(&gpu_result, d_result, sizeof(long long), cudaMemcpyDeviceToHost));
    long long cpu_result = 0;
    for (int i = 0; i < n; ++i) cpu_result += h_idata[i] * h_idata[i];
    printf("sumSquaresCG: GPU %lld, CPU %lld\n", gpu_result, cpu_result);

    // A multi-block template kernel through cudaLaunchKernel, in a stream.
    const int m = 4096;
    float* h_f = (float*)malloc(m * sizeof(float));
    for (int i = 0; i < m; ++i) h_f[i] = (float)(i % 64);
    float* d_f;
    checkCudaErrors(cudaMalloc((void**)&d_f, m * sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_f, h_f, m * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t stream;
    checkCudaErrors(cudaStreamCreate(&stream));
    float factor = 1.5f;
    int mArg = m;
    void* scaleArgs[] = {&d_f, &factor, &mArg};
    checkCudaErrors(cudaLaunchKernel((const void*)&scaleKernel<float>, dim3(8), dim3(128), scaleArgs, 0, stream));
    checkCudaErrors(cudaStreamSynchronize(stream));
    checkCudaErrors(cudaMemcpy(h_f, d_f, m * sizeof(float), cudaMemcpyDeviceToHost));
    double fsum = 0;
    int fwrong = 0;
    for (int i = 0; i < m; ++i) {
        fsum += h_f[i];
        fwrong += h_f[i] != 1.5f * (float)(i % 64);
    }
    printf("scaleKernel<float>: sum %.1f, %d wrong\n", fsum, fwrong);

    // The kernel pointer kept in a variable and launched later.
    void* func = (void*)fillKernel;
    int* d_fill;
    checkCudaErrors(cudaMalloc((void**)&d_fill, 256 * sizeof(int)));
    int value = 7;
    void* fillArgs[] = {&d_fill, &value};
    checkCudaErrors(cudaLaunchKernel(func, dim3(4), dim3(64), fillArgs, 0, 0));
    int h_fill[256];
    checkCudaErrors(cudaMemcpy(h_fill, d_fill, sizeof h_fill, cudaMemcpyDeviceToHost));
    int fillSum = 0;
    for (int i = 0; i < 256; ++i) fillSum += h_fill[i];
    printf("fillKernel: sum %d\n", fillSum);

    checkCudaErrors(cudaStreamDestroy(stream));
    checkCudaErrors(cudaFree(d_idata));
    checkCudaErrors(cudaFree(d_partial));
    checkCudaErrors(cudaFree(d_result));
    checkCudaErrors(cudaFree(d_f));
    checkCudaErrors(cudaFree(d_fill));
    free(h_idata);
    free(h_f);
    const bool ok = gpu_result == cpu_result && fwrong == 0 && fillSum == 7 * 256;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
