// Warp-synchronous code made correct for independent thread scheduling (Volta and later), as in
// NVIDIA's "Using CUDA Warp-Level Primitives": the last warp of a shared-memory reduction with
// __syncwarp() between each read and write, a half-warp exchange under __syncwarp(0x0000ffff),
// and lanes that diverge and then meet again at __syncwarp() before reading each other's writes.
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

#define BLOCK 256

__global__ void reduceSyncwarp(const int* g_in, int* g_out) {
    __shared__ int s[BLOCK];
    const unsigned int tid = threadIdx.x;
    s[tid] = g_in[blockIdx.x * BLOCK + tid];
    __syncthreads();
    for (unsigned int stride = BLOCK / 2; stride > 32; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        int v = s[tid] + s[tid + 32];
        // Each step reads its neighbour's value before anyone overwrites it, then writes.
        for (int offset = 16; offset > 0; offset >>= 1) {
            s[tid] = v;
            __syncwarp();
            v += s[tid + offset];
            __syncwarp();
        }
        if (tid == 0) g_out[blockIdx.x] = v;
    }
}

// Lanes 0-15 reverse their values through shared memory, synchronizing only the half warp;
// lanes 16-31 rotate theirs by one after a divergent branch, meeting at a full __syncwarp().
__global__ void exchange(const int* g_in, int* g_out) {
    __shared__ int sh[64];
    int* s = sh + (threadIdx.x / 32) * 32;  // this warp's 32 entries
    const unsigned int lane = threadIdx.x % 32;
    const int v = g_in[threadIdx.x];
    if (lane < 16) {
        s[lane] = v;
        __syncwarp(0x0000ffff);
        g_out[threadIdx.x] = s[15 - lane];
    } else {
        if (lane % 2 == 0)
            s[lane] = v * 10;
        else
            s[lane] = v * 100;
    }
    __syncwarp();
    if (lane >= 16) g_out[threadIdx.x] = s[16 + (lane - 16 + 1) % 16];
}

int main() {
    const int blocks = 16, n = blocks * BLOCK;
    int* h_in = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h_in[i] = (i * 13) % 29;
    int *d_in, *d_out;
    checkCudaErrors(cudaMalloc((void**)&d_in, n * sizeof(int)));
    checkCudaErrors(cudaMalloc((void**)&d_out, n * sizeof(int)));
    checkCudaErrors(cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
    reduceSyncwarp<<<blocks, BLOCK>>>(d_in, d_out);
    checkCudaErrors(cudaGetLastError());
    int h_sums[blocks];
    checkCudaErrors(cudaMemcpy(h_sums, d_out, sizeof(h_sums), cudaMemcpyDeviceToHost));
    int wrong = 0, total = 0;
    for (int b = 0; b < blocks; ++b) {
        int ref = 0;
        for (int i = 0; i < BLOCK; ++i) ref += h_in[b * BLOCK + i];
        wrong += h_sums[b] != ref;
        total += h_sums[b];
    }
    printf("block sums: [0] %d, [15] %d, total %d, %d wrong\n", h_sums[0], h_sums[blocks - 1], total, wrong);

    exchange<<<1, 64>>>(d_in, d_out);
    checkCudaErrors(cudaGetLastError());
    int h_x[64];
    checkCudaErrors(cudaMemcpy(h_x, d_out, sizeof(h_x), cudaMemcpyDeviceToHost));
    int xwrong = 0;
    for (int t = 0; t < 64; ++t) {
        const int lane = t % 32, w = t - lane;
        int ref;
        if (lane < 16) {
            ref = h_in[w + 15 - lane];
        } else {
            const int src = 16 + (lane - 16 + 1) % 16;
            ref = h_in[w + src] * (src % 2 == 0 ? 10 : 100);
        }
        xwrong += h_x[t] != ref;
    }
    printf("exchange: out[0] %d, out[15] %d, out[16] %d, out[31] %d, out[47] %d, %d wrong\n", h_x[0], h_x[15], h_x[16],
           h_x[31], h_x[47], xwrong);
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    free(h_in);
    const bool ok = wrong == 0 && xwrong == 0;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
