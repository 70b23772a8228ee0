// Inclusive prefix sum with shuffles, after NVIDIA's shfl_scan sample: __shfl_up_sync scans each
// warp, the warp totals go through shared memory and are scanned by the first warp with a partial
// mask and width, a second launch scans the block totals, and uniform_add adds them back.
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

__global__ void shfl_scan_test(int* data, int width, int* partial_sums = NULL) {
    extern __shared__ int sums[];
    int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
    int lane_id = id % warpSize;
    int warp_id = threadIdx.x / warpSize;
    int value = data[id];
    // Inclusive scan of the warp.
#pragma unroll
    for (int i = 1; i <= width; i *= 2) {
        unsigned int mask = 0xffffffff;
        int n = __shfl_up_sync(mask, value, i, width);
        if (lane_id >= i) value += n;
    }
    if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
    __syncthreads();
    // The first warp scans the warp totals: as many lanes as the block has warps.
    if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
        int warp_sum = sums[lane_id];
        int mask = (1 << (blockDim.x / warpSize)) - 1;
        for (int i = 1; i <= (blockDim.x / warpSize); i *= 2) {
            int n = __shfl_up_sync(mask, warp_sum, i, (blockDim.x / warpSize));
            if (lane_id >= i) warp_sum += n;
        }
        sums[lane_id] = warp_sum;
    }
    __syncthreads();
    int blockSum = 0;
    if (warp_id > 0) blockSum = sums[warp_id - 1];
    value += blockSum;
    data[id] = value;
    if (partial_sums != NULL && threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}

__global__ void uniform_add(int* data, int* partial_sums, int len) {
    __shared__ int buf;
    int id = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (id >= len) return;
    if (threadIdx.x == 0) buf = partial_sums[blockIdx.x];
    __syncthreads();
    data[id] += buf;
}

int main() {
    const int n_elements = 16384;
    const int blockSize = 256;
    const int gridSize = n_elements / blockSize;
    const int nWarps = blockSize / 32;
    const int n_partialSums = gridSize;
    const int partial_sz = n_partialSums * sizeof(int);
    int* h_data;
    int* h_result;
    checkCudaErrors(cudaMallocHost((void**)&h_data, n_elements * sizeof(int)));
    checkCudaErrors(cudaMallocHost((void**)&h_result, n_elements * sizeof(int)));
    for (int i = 0; i < n_elements; ++i) h_data[i] = (i * 7) % 5 + 1;

    int *d_data, *d_partial_sums;
    checkCudaErrors(cudaMalloc((void**)&d_data, n_elements * sizeof(int)));
    checkCudaErrors(cudaMalloc((void**)&d_partial_sums, partial_sz));
    checkCudaErrors(cudaMemset(d_partial_sums, 0, partial_sz));
    checkCudaErrors(cudaMemcpy(d_data, h_data, n_elements * sizeof(int), cudaMemcpyHostToDevice));

    printf("Scan summation for %d elements, %d partial sums\n", n_elements, n_partialSums);
    shfl_scan_test<<<gridSize, blockSize, nWarps * sizeof(int)>>>(d_data, 32, d_partial_sums);
    // The block totals: one block of n_partialSums threads (2 warps here).
    shfl_scan_test<<<1, n_partialSums, (n_partialSums / 32) * sizeof(int)>>>(d_partial_sums, 32);
    uniform_add<<<gridSize - 1, blockSize>>>(d_data + blockSize, d_partial_sums, n_elements - blockSize);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_result, d_data, n_elements * sizeof(int), cudaMemcpyDeviceToHost));

    int wrong = 0;
    int ref = 0;
    for (int i = 0; i < n_elements; ++i) {
        ref += h_data[i];
        wrong += h_result[i] != ref;
    }
    printf("result[0] = %d, result[255] = %d, result[256] = %d, result[%d] = %d\n", h_result[0], h_result[255],
           h_result[256], n_elements - 1, h_result[n_elements - 1]);
    printf("%d mismatches against the CPU scan\n", wrong);
    checkCudaErrors(cudaFreeHost(h_data));
    checkCudaErrors(cudaFreeHost(h_result));
    checkCudaErrors(cudaFree(d_data));
    checkCudaErrors(cudaFree(d_partial_sums));
    printf("%s\n", wrong == 0 ? "PASSED" : "FAILED");
    return wrong == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
