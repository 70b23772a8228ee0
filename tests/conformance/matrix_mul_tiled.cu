// Matrix multiplication with shared-memory tiles, after NVIDIA's matrixMul sample: a kernel
// template on BLOCK_SIZE (instantiated for 16 and 8), As/Bs tiles, #pragma unroll over the tile,
// dim3 grids. Integer-valued inputs keep every product and sum exact, so C matches the CPU bit
// for bit.
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

// C = A * B; wA is A's width, wB is B's width; both multiples of BLOCK_SIZE.
template <int BLOCK_SIZE>
__global__ void MatrixMulCUDA(float* C, float* A, float* B, int wA, int wB) {
    int bx = blockIdx.x;
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int aBegin = wA * BLOCK_SIZE * by;
    int aEnd = aBegin + wA - 1;
    int aStep = BLOCK_SIZE;
    int bBegin = BLOCK_SIZE * bx;
    int bStep = BLOCK_SIZE * wB;
    float Csub = 0;
    for (int a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k) Csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = Csub;
}

template <int BLOCK_SIZE>
int MatrixMultiply(const dim3& dimsA, const dim3& dimsB) {
    unsigned int size_A = dimsA.x * dimsA.y;
    unsigned int size_B = dimsB.x * dimsB.y;
    unsigned int mem_size_A = sizeof(float) * size_A;
    unsigned int mem_size_B = sizeof(float) * size_B;
    dim3 dimsC(dimsB.x, dimsA.y, 1);
    unsigned int mem_size_C = dimsC.x * dimsC.y * sizeof(float);
    float *h_A, *h_B, *h_C;
    checkCudaErrors(cudaMallocHost(&h_A, mem_size_A));
    checkCudaErrors(cudaMallocHost(&h_B, mem_size_B));
    checkCudaErrors(cudaMallocHost(&h_C, mem_size_C));
    for (unsigned int i = 0; i < size_A; ++i) h_A[i] = (float)((int)(i % 5) - 2);
    for (unsigned int i = 0; i < size_B; ++i) h_B[i] = (float)(i % 3);
    float *d_A, *d_B, *d_C;
    checkCudaErrors(cudaMalloc(reinterpret_cast<void**>(&d_A), mem_size_A));
    checkCudaErrors(cudaMalloc(reinterpret_cast<void**>(&d_B), mem_size_B));
    checkCudaErrors(cudaMalloc(reinterpret_cast<void**>(&d_C), mem_size_C));
    cudaStream_t stream;
    checkCudaErrors(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    checkCudaErrors(cudaMemcpyAsync(d_A, h_A, mem_size_A, cudaMemcpyHostToDevice, stream));
    checkCudaErrors(cudaMemcpyAsync(d_B, h_B, mem_size_B, cudaMemcpyHostToDevice, stream));
    dim3 threads(BLOCK_SIZE, BLOCK_SIZE);
    dim3 grid(dimsB.x / threads.x, dimsA.y / threads.y);
    printf("BLOCK_SIZE %d: A %ux%u, B %ux%u, grid %ux%u\n", BLOCK_SIZE, dimsA.x, dimsA.y, dimsB.x, dimsB.y, grid.x,
           grid.y);
    MatrixMulCUDA<BLOCK_SIZE><<<grid, threads, 0, stream>>>(d_C, d_A, d_B, dimsA.x, dimsB.x);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpyAsync(h_C, d_C, mem_size_C, cudaMemcpyDeviceToHost, stream));
    checkCudaErrors(cudaStreamSynchronize(stream));

    int errors = 0;
    double checksum = 0;
    for (unsigned int row = 0; row < dimsC.y; ++row) {
        for (unsigned int col = 0; col < dimsC.x; ++col) {
            float ref = 0;
            for (unsigned int k = 0; k < dimsA.x; ++k) ref += h_A[row * dimsA.x + k] * h_B[k * dimsB.x + col];
            errors += h_C[row * dimsC.x + col] != ref;
            checksum += h_C[row * dimsC.x + col];
        }
    }
    printf("  C[0][0] = %.0f, C[%u][%u] = %.0f, checksum %.0f, %d errors\n", h_C[0], dimsC.y - 1, dimsC.x - 1,
           h_C[dimsC.x * dimsC.y - 1], checksum, errors);
    checkCudaErrors(cudaFreeHost(h_A));
    checkCudaErrors(cudaFreeHost(h_B));
    checkCudaErrors(cudaFreeHost(h_C));
    checkCudaErrors(cudaFree(d_A));
    checkCudaErrors(cudaFree(d_B));
    checkCudaErrors(cudaFree(d_C));
    checkCudaErrors(cudaStreamDestroy(stream));
    return errors;
}

int main() {
    printf("[Matrix Multiply Using CUDA] - Starting...\n");
    int errors = MatrixMultiply<16>(dim3(64, 32, 1), dim3(48, 64, 1));
    errors += MatrixMultiply<8>(dim3(24, 40, 1), dim3(16, 24, 1));
    printf("Result = %s\n", errors == 0 ? "PASS" : "FAIL");
    return errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
