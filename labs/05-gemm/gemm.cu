// Lab 05: SGEMM, C = alpha * A * B + beta * C (row-major). Your file: implement the TODOs, then run
//   ./workbook check 05
// The handout is labs/05-gemm/README.md; the interface is gemm.h (do not edit it).
#include "gemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Provided: alpha * acc + beta * (*c), without reading *c when beta == 0 (C may hold NaN then).
__device__ inline float scaled(float alpha, float acc, float beta, const float* c) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// Provided: the number of tiles of size b that cover a (rounded up).
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Every launcher: return cudaSuccess without launching when M == 0 or N == 0 (a grid of 0
// blocks is an invalid configuration); K == 0 needs no special case (the sum is 0).
// Index with std::size_t products (static_cast<std::size_t>(r) * lda + k): 4096 x 4096
// matrices are fine in int, larger ones are not.

// ---- Version 1: naive ----------------------------------------------------------------------------

// TODO(1): one thread per element of C, threadIdx.x along the rows:
//   r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
//   if r < M and c < N: acc = sum over k of A[r * lda + k] * B[k * ldb + c];
//   C[r * ldc + c] = scaled(alpha, acc, beta, &C[r * ldc + c]).
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
}

cudaError_t sgemm_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                        float* C, int ldc) {
  // TODO(2): blocks of 32 x 32 threads, grid (ceil_div(M, 32), ceil_div(N, 32)); launch, then
  // return cudaGetLastError().
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Version 2: coalesced ------------------------------------------------------------------------

// TODO(3): version 1 with threadIdx.x along the columns: c = blockIdx.x * blockDim.x + threadIdx.x,
// r = blockIdx.y * blockDim.y + threadIdx.y.
__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                       int ldb, float beta, float* C, int ldc) {
}

cudaError_t sgemm_coalesced(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  // TODO(4): as TODO(2), with grid (ceil_div(N, 32), ceil_div(M, 32)).
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Version 3: shared-memory tiles --------------------------------------------------------------

// TODO(5): a block of 32 x 32 threads computes the 32 x 32 tile of C at rows blockIdx.y * 32 + ty,
// columns blockIdx.x * 32 + tx. Declare __shared__ float As[32][32], Bs[32][32]. For k0 = 0, 32,
// 64, ... < K:
//   a. As[ty][tx] = A(r, k0 + tx), Bs[ty][tx] = B(k0 + ty, c), each 0 when outside its matrix;
//   b. __syncthreads();
//   c. acc += As[ty][k] * Bs[k][tx] for k = 0 .. 31;
//   d. __syncthreads() (before the next step overwrites the tiles).
// Then store C(r, c) when r < M and c < N.
__global__ void sgemm_smem_tiled_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                        int ldb, float beta, float* C, int ldc) {
}

cudaError_t sgemm_smem_tiled(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
  // TODO(6): blocks of 32 x 32 threads, grid (ceil_div(N, 32), ceil_div(M, 32)).
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Version 4: 1D register blocking -------------------------------------------------------------

// TODO(7): block tile BM x BN = 64 x 64, K step BK = 8, TM = 8 results per thread: 512 threads
// (1D block). Shared: float As[BM * BK], Bs[BK * BN]. Thread t:
//   loads As[t] = A(row0 + t / BK, k0 + t % BK) and Bs[t] = B(k0 + t / BN, col0 + t % BN) (0 outside);
//   computes rows (t / BN) * TM + i (i < TM) of column t % BN of the block tile:
//     for each d < BK: b = Bs[d * BN + t % BN]; acc[i] += As[((t / BN) * TM + i) * BK + d] * b;
//   with __syncthreads() after the loads and after the compute loop, as in version 3.
__global__ void sgemm_1d_blocktile_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                          int ldb, float beta, float* C, int ldc) {
}

cudaError_t sgemm_1d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc) {
  // TODO(8): 512 threads per block, grid (ceil_div(N, 64), ceil_div(M, 64)).
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Version 5: 2D register blocking -------------------------------------------------------------

// TODO(9): block tile 128 x 128, BK = 8, each thread an 8 x 8 block of results: 256 threads.
// Thread t owns rows (t / 16) * 8 + i and columns (t % 16) * 8 + j of the block tile.
//   a. Loads: the A tile has 128 * 8 elements and the B tile 8 * 128, 4 per thread each: element
//      f = t + 256 * i of a tile (row f / width, column f % width), 0 outside the matrix.
//   b. For each d < BK: reg_m[i] = As[(row_i) * BK + d] (8 values), reg_n[j] = Bs[d * 128 + col_j]
//      (8 values), then acc[i][j] += reg_m[i] * reg_n[j] for all 64 pairs.
//   c. Store the 64 results that lie inside C.
__global__ void sgemm_2d_blocktile_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                          int ldb, float beta, float* C, int ldc) {
}

cudaError_t sgemm_2d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc) {
  // TODO(10): 256 threads per block, grid (ceil_div(N, 128), ceil_div(M, 128)).
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Version 6: vectorized loads -----------------------------------------------------------------

// TODO(11): version 5 with float4 memory traffic.
//   a. Load each tile in float4s: A as 128 rows of 2 float4s, B as 8 rows of 32 float4s (one of
//      each per thread). A float4 load *reinterpret_cast<const float4*>(&A[r * lda + k]) needs a
//      16-byte aligned address: use it only when lda % 4 == 0 (pass a flag from the launcher)
//      and k + 3 < K; otherwise load the four elements one by one, 0 outside the matrix.
//   b. Store the A tile transposed: As[k * 128 + m], so that a thread's 8 values of A for one k
//      are consecutive and can be read from shared memory as two float4s, like its 8 values of B.
//   c. Store C with float4s where ldc % 4 == 0 and the four columns are < N, else one by one.
__global__ void sgemm_vectorized_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                        int ldb, float beta, float* C, int ldc) {
}

cudaError_t sgemm_vectorized(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
  // TODO(12): as TODO(10), with sgemm_vectorized_kernel (add the alignment flags you need).
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}

// ---- Final version ---------------------------------------------------------------------------------

cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                  float* C, int ldc) {
  // TODO(13): your fastest SGEMM. Start by calling version 6; on a GPU, make its tile sizes
  // template parameters and try BK = 16, other BM x BN, TM x TN, then warp tiling.
  (void)M; (void)N; (void)K; (void)alpha; (void)A; (void)lda; (void)B; (void)ldb; (void)beta; (void)C; (void)ldc;
  return cudaErrorNotYetImplemented;
}
