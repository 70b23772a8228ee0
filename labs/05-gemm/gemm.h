/// @file
/// @brief Lab 05 interface: single-precision matrix multiplication (SGEMM), from a naive
/// kernel to register blocking with vectorized loads.
///
/// The checker calls these functions; implement them in gemm.cu and do not change this file.
///
/// Every function computes
///
///     C = alpha * A * B + beta * C
///
/// with row-major float matrices in device memory: A is M x K, B is K x N, C is M x N, and
/// element (r, c) of a matrix X with leading dimension ldx is X[r * ldx + c]. The leading
/// dimension is the distance between the starts of two rows, at least the row length
/// (lda >= K, ldb >= N, ldc >= N); the elements between the end of a row and the start of the
/// next (columns N .. ldc-1 of C) are not part of the matrix and must not be written.
///
/// Every shape with 0 <= M, N, K <= 2^20 and each matrix below 2^31 elements is valid:
/// multiples of the tile sizes or not, 1, tall and skinny (2^20 keeps a grid of 32-wide tiles
/// within gridDim.y <= 65535). M == 0 or N == 0 does nothing; K == 0 gives
/// C = beta * C. When beta == 0, C is output only: it must not be read (it may hold NaN, and
/// 0 * NaN is NaN). A, B and C are distinct arrays; A and B are inputs only. A, B and C may
/// start at any float, not only at a 16-byte boundary as cudaMalloc memory does (labs 07, 08 and
/// 12 pass pointers into larger arrays), and a leading dimension need not be a multiple of 4: a
/// float4 access is aligned only when both the address and the leading dimension allow it. You
/// choose every launch configuration. Each function returns the first CUDA error it sees
/// (cudaGetLastError() after a launch), else cudaSuccess.
#pragma once

#include <cuda_runtime.h>

/// Version 1: one thread per element of C, no shared memory. threadIdx.x runs along the rows
/// of C (r = blockIdx.x * blockDim.x + threadIdx.x), so the lanes of a warp read A K floats
/// apart and write C ldc floats apart: every lane its own sector.
cudaError_t sgemm_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                        float* C, int ldc);

/// Version 2: version 1 with threadIdx.x along the columns of C
/// (c = blockIdx.x * blockDim.x + threadIdx.x): a warp reads one element of A (a broadcast)
/// and 32 consecutive elements of B, and writes 32 consecutive elements of C.
cudaError_t sgemm_coalesced(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc);

/// Version 3: shared-memory tiling. A block of 32 x 32 threads computes a 32 x 32 tile of C;
/// for each step of 32 along K it loads a 32 x 32 tile of A and one of B into shared memory
/// (one element per thread, coalesced, 0 outside the matrices), and every thread reads them
/// from there 32 times.
cudaError_t sgemm_smem_tiled(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc);

/// Version 4: 1D register blocking. Each thread computes several (TM >= 4) elements of one
/// column of C's block tile, keeping one element of the B tile in a register across them.
cudaError_t sgemm_1d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc);

/// Version 5: 2D register blocking. Each thread computes a TM x TN block of C (TM, TN >= 4)
/// from TM elements of A and TN elements of B held in registers: TM + TN shared-memory loads
/// for TM * TN multiply-adds.
cudaError_t sgemm_2d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc);

/// Version 6: version 5 with 16-byte float4 global loads, and the A tile stored transposed in
/// shared memory so that the inner loop also reads it with float4 loads. Falls back to scalar
/// loads where a float4 would be misaligned (a leading dimension not a multiple of 4) or would
/// cross the edge of a matrix.
cudaError_t sgemm_vectorized(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc);

/// The fastest SGEMM you can write (the checker times it at 4096 x 4096 x 4096 on a GPU against
/// cuBLAS). Start from version 6 and tune its tile sizes.
cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                  float* C, int ldc);
