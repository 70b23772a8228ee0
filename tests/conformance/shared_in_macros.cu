// Kernels written inside a #define, with __shared__ and extern __shared__ arrays in their bodies
// (one macro expanded for several types and block sizes), a template kernel in a macro, and a
// macro that declares a __shared__ tile inside a kernel written outside it.
#include <cstdio>

#define DEFINE_BLOCK_SUM(NAME, T, BLOCK)                                        \
    __global__ void NAME(const T* in, T* out) {                                 \
        __shared__ T partial[BLOCK];                                            \
        partial[threadIdx.x] = in[blockIdx.x * BLOCK + threadIdx.x];            \
        __syncthreads();                                                        \
        for (int s = BLOCK / 2; s > 0; s /= 2) {                                \
            if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s]; \
            __syncthreads();                                                    \
        }                                                                       \
        if (threadIdx.x == 0) out[blockIdx.x] = partial[0];                     \
    }

DEFINE_BLOCK_SUM(block_sum_int, int, 128)
DEFINE_BLOCK_SUM(block_sum_float, float, 64)

#define DEFINE_REVERSE(NAME, T)                                                 \
    __global__ void NAME(T* data) {                                             \
        extern __shared__ T staged[];                                           \
        staged[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];      \
        __syncthreads();                                                        \
        data[blockIdx.x * blockDim.x + threadIdx.x] = staged[blockDim.x - 1 - threadIdx.x]; \
    }

DEFINE_REVERSE(reverse_int, int)

#define DEFINE_BLOCK_MAX(NAME)                                                  \
    template <class T, int BLOCK>                                               \
    __global__ void NAME(const T* in, T* out) {                                 \
        __shared__ T best[BLOCK];                                               \
        best[threadIdx.x] = in[threadIdx.x];                                    \
        __syncthreads();                                                        \
        if (threadIdx.x == 0) {                                                 \
            T m = best[0];                                                      \
            for (int i = 1; i < BLOCK; ++i) m = best[i] > m ? best[i] : m;      \
            *out = m;                                                           \
        }                                                                       \
    }

DEFINE_BLOCK_MAX(block_max)

#define SHARED_TILE(T, name, N) __shared__ T name[N]

__global__ void rotate(int* data) {
    SHARED_TILE(int, tile, 32);
    tile[threadIdx.x] = data[threadIdx.x];
    __syncthreads();
    data[threadIdx.x] = tile[(threadIdx.x + 1) % 32];
}

int main() {
    const int blocks = 3;
    int hi[128 * blocks], hsum[blocks];
    float hf[64 * blocks], hfsum[blocks];
    for (int i = 0; i < 128 * blocks; ++i) hi[i] = i;
    for (int i = 0; i < 64 * blocks; ++i) hf[i] = 0.5f * (i % 64);
    int *di, *dsum;
    float *df, *dfsum;
    cudaMalloc(&di, sizeof hi);
    cudaMalloc(&dsum, sizeof hsum);
    cudaMalloc(&df, sizeof hf);
    cudaMalloc(&dfsum, sizeof hfsum);
    cudaMemcpy(di, hi, sizeof hi, cudaMemcpyHostToDevice);
    cudaMemcpy(df, hf, sizeof hf, cudaMemcpyHostToDevice);

    block_sum_int<<<blocks, 128>>>(di, dsum);
    block_sum_float<<<blocks, 64>>>(df, dfsum);
    cudaMemcpy(hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost);
    cudaMemcpy(hfsum, dfsum, sizeof hfsum, cudaMemcpyDeviceToHost);
    printf("block_sum_int: %d %d %d\n", hsum[0], hsum[1], hsum[2]);
    printf("block_sum_float: %g %g %g\n", hfsum[0], hfsum[1], hfsum[2]);

    reverse_int<<<2, 64, 64 * sizeof(int)>>>(di);
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    printf("reverse_int: %d %d %d %d\n", hi[0], hi[63], hi[64], hi[127]);

    block_max<int, 32><<<1, 32>>>(di, dsum);
    cudaMemcpy(hsum, dsum, sizeof(int), cudaMemcpyDeviceToHost);
    printf("block_max<int, 32>: %d\n", hsum[0]);

    rotate<<<1, 32>>>(di);
    cudaMemcpy(hi, di, 32 * sizeof(int), cudaMemcpyDeviceToHost);
    printf("rotate: %d %d %d\n", hi[0], hi[1], hi[31]);
    printf("%s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
