// __device__ variables as public code uses them: a struct and an array set with
// cudaMemcpyToSymbol (with an offset, and asynchronously), a counter the kernel increments,
// cudaGetSymbolAddress to use a variable through a pointer (cudaMemset, kernel arguments),
// cudaGetSymbolSize, and cudaMemcpyFromSymbol(Async) to read them back.
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

struct Params {
    int scale;
    int bias;
    float weights[4];
};

__device__ Params d_params;
__device__ int d_table[16];
__device__ unsigned int d_counter;
__device__ float d_out[64];

__global__ void apply(int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        d_out[i] = d_params.weights[i % 4] * (float)(d_table[i % 16] * d_params.scale + d_params.bias);
        atomicAdd(&d_counter, 1u);
    }
}

__global__ void addThroughPointer(float* out, const int* table, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += (float)table[i % 16];
}

int main() {
    Params h_params = {3, -1, {1.0f, 0.5f, 2.0f, -1.0f}};
    checkCudaErrors(cudaMemcpyToSymbol(d_params, &h_params, sizeof(Params)));
    int h_table[16];
    for (int i = 0; i < 16; ++i) h_table[i] = i;
    checkCudaErrors(cudaMemcpyToSymbol(d_table, h_table, sizeof(h_table)));
    // Overwrite entries 8..11 only: offset in bytes from the start of the symbol.
    const int patch[4] = {100, 101, 102, 103};
    checkCudaErrors(cudaMemcpyToSymbol(d_table, patch, sizeof(patch), 8 * sizeof(int), cudaMemcpyHostToDevice));
    // The counter through its address.
    void* counterAddr = NULL;
    checkCudaErrors(cudaGetSymbolAddress(&counterAddr, d_counter));
    checkCudaErrors(cudaMemset(counterAddr, 0, sizeof(unsigned int)));

    size_t tableSize = 0, outSize = 0, paramsSize = 0;
    checkCudaErrors(cudaGetSymbolSize(&tableSize, d_table));
    checkCudaErrors(cudaGetSymbolSize(&outSize, d_out));
    checkCudaErrors(cudaGetSymbolSize(&paramsSize, d_params));
    printf("symbol sizes: d_table %zu, d_out %zu, d_params %zu\n", tableSize, outSize, paramsSize);

    const int n = 64;
    apply<<<2, 32>>>(n);
    checkCudaErrors(cudaGetLastError());
    float* outPtr = NULL;
    int* tablePtr = NULL;
    checkCudaErrors(cudaGetSymbolAddress((void**)&outPtr, d_out));
    checkCudaErrors(cudaGetSymbolAddress((void**)&tablePtr, d_table));
    addThroughPointer<<<1, 64>>>(outPtr, tablePtr, n);
    checkCudaErrors(cudaGetLastError());

    cudaStream_t stream;
    checkCudaErrors(cudaStreamCreate(&stream));
    float h_out[64];
    unsigned int h_counter = 0;
    int h_back[16];
    checkCudaErrors(cudaMemcpyFromSymbolAsync(h_out, d_out, sizeof(h_out), 0, cudaMemcpyDeviceToHost, stream));
    checkCudaErrors(cudaMemcpyFromSymbolAsync(&h_counter, d_counter, sizeof(h_counter), 0, cudaMemcpyDeviceToHost,
                                              stream));
    checkCudaErrors(cudaStreamSynchronize(stream));
    checkCudaErrors(cudaMemcpyFromSymbol(h_back, d_table, 4 * sizeof(int), 7 * sizeof(int)));
    printf("d_table[7..10] = %d %d %d %d\n", h_back[0], h_back[1], h_back[2], h_back[3]);
    printf("d_counter = %u\n", h_counter);

    int wrong = 0;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        const int t = (i % 16 >= 8 && i % 16 < 12) ? 100 + i % 16 - 8 : i % 16;
        const float expect = h_params.weights[i % 4] * (float)(t * h_params.scale + h_params.bias) + (float)t;
        wrong += h_out[i] != expect;
        sum += h_out[i];
    }
    printf("d_out[0] = %.1f, d_out[9] = %.1f, d_out[63] = %.1f, sum %.1f, %d wrong\n", h_out[0], h_out[9], h_out[63],
           sum, wrong);

    // Asynchronous upload of the parameters, then a second launch in the stream.
    Params h_params2 = {1, 0, {1.0f, 1.0f, 1.0f, 1.0f}};
    checkCudaErrors(cudaMemcpyToSymbolAsync(d_params, &h_params2, sizeof(Params), 0, cudaMemcpyHostToDevice, stream));
    apply<<<1, 16, 0, stream>>>(16);
    checkCudaErrors(cudaMemcpyFromSymbolAsync(h_out, d_out, 16 * sizeof(float), 0, cudaMemcpyDeviceToHost, stream));
    checkCudaErrors(cudaMemcpyFromSymbolAsync(&h_counter, d_counter, sizeof(h_counter), 0, cudaMemcpyDeviceToHost,
                                              stream));
    checkCudaErrors(cudaStreamSynchronize(stream));
    printf("after the second launch: d_out[10] = %.1f, d_counter = %u\n", h_out[10], h_counter);
    checkCudaErrors(cudaStreamDestroy(stream));
    const bool ok = wrong == 0 && h_counter == 80 && h_out[10] == 102.0f;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
