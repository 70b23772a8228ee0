// Known-wrong lab 05: the shared-memory tiled kernel (version 3) loads its A tile without testing
// the column against K, so the last, partial K step reads past the end of A's rows. Zero-padding
// the B tile alone would make those products 0, but the checker surrounds A with NaN and
// NaN * 0 = NaN. Expected: Correctness.SmemTiled fails with NaN results and the explanation that
// elements outside A or B were read.
#include "gemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

// alpha * acc + beta * c, without reading c when beta == 0 (C may hold NaN then).
__device__ inline float scaled(float alpha, float acc, float beta, const float* c) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

// ---- Version 1: naive --------------------------------------------------------------------------

// Lanes of a warp take consecutive rows r: A[r * lda + k] is lda floats apart between lanes,
// and so are the stores into C.
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                   float beta, float* C, int ldc) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  const int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= M || c >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[static_cast<std::size_t>(r) * lda + k] * B[static_cast<std::size_t>(k) * ldb + c];
  float* out = &C[static_cast<std::size_t>(r) * ldc + c];
  *out = scaled(alpha, acc, beta, out);
}

cudaError_t sgemm_naive(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                        float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  const dim3 block(32, 32);
  const dim3 grid(ceil_div(M, 32), ceil_div(N, 32));
  sgemm_naive_kernel<<<grid, block>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

// ---- Version 2: coalesced ----------------------------------------------------------------------

// Lanes take consecutive columns c: a warp reads one A element (broadcast) and 32 consecutive
// B elements per k, and writes 32 consecutive elements of C.
__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                       int ldb, float beta, float* C, int ldc) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= M || c >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[static_cast<std::size_t>(r) * lda + k] * B[static_cast<std::size_t>(k) * ldb + c];
  float* out = &C[static_cast<std::size_t>(r) * ldc + c];
  *out = scaled(alpha, acc, beta, out);
}

cudaError_t sgemm_coalesced(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                            float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  const dim3 block(32, 32);
  const dim3 grid(ceil_div(N, 32), ceil_div(M, 32));
  sgemm_coalesced_kernel<<<grid, block>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

// ---- Version 3: shared-memory tiles --------------------------------------------------------------

constexpr int kTile = 32;

// A 32 x 32 block computes a 32 x 32 tile of C. Per step of 32 along K, each thread loads one
// element of A's tile and one of B's (zeros outside the matrices, so partial tiles need no
// special case in the inner loop); after the barrier, As[ty][k] is a broadcast and Bs[k][tx]
// 32 consecutive words: no bank conflicts.
__global__ void sgemm_smem_tiled_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                        int ldb, float beta, float* C, int ldc) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r = blockIdx.y * kTile + ty;
  const int c = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = r < M ? A[static_cast<std::size_t>(r) * lda + k0 + tx] : 0.0f;
    Bs[ty][tx] = k0 + ty < K && c < N ? B[static_cast<std::size_t>(k0 + ty) * ldb + c] : 0.0f;
    __syncthreads();  // the tiles are complete
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done with the tiles before they are overwritten
  }
  if (r < M && c < N) {
    float* out = &C[static_cast<std::size_t>(r) * ldc + c];
    *out = scaled(alpha, acc, beta, out);
  }
}

cudaError_t sgemm_smem_tiled(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  const dim3 block(kTile, kTile);
  const dim3 grid(ceil_div(N, kTile), ceil_div(M, kTile));
  sgemm_smem_tiled_kernel<<<grid, block>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

// ---- Version 4: 1D register blocking --------------------------------------------------------------

// Block tile BM x BN, K step BK, each thread TM results in one column. 512 threads: each loads
// one element of the A tile (BM x BK) and one of the B tile (BK x BN), both coalesced.
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
    sgemm_1d_blocktile_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                              float beta, float* C, int ldc) {
  static_assert(BM * BK == BM * BN / TM && BN * BK == BM * BN / TM, "one tile element per thread");
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int a_row = tid / BK, a_col = tid % BK;
  const int b_row = tid / BN, b_col = tid % BN;
  const int thread_row = tid / BN, thread_col = tid % BN;  // results rows thread_row * TM + i
  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    const int ar = row0 + a_row, ak = k0 + a_col;
    As[a_row * BK + a_col] = ar < M && ak < K ? A[static_cast<std::size_t>(ar) * lda + ak] : 0.0f;
    const int bk = k0 + b_row, bc = col0 + b_col;
    Bs[b_row * BN + b_col] = bk < K && bc < N ? B[static_cast<std::size_t>(bk) * ldb + bc] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int d = 0; d < BK; ++d) {
      const float b = Bs[d * BN + thread_col];  // one shared load, TM multiply-adds
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(thread_row * TM + i) * BK + d] * b;
    }
    __syncthreads();
  }
  const int c = col0 + thread_col;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + thread_row * TM + i;
    if (r < M && c < N) {
      float* out = &C[static_cast<std::size_t>(r) * ldc + c];
      *out = scaled(alpha, acc[i], beta, out);
    }
  }
}

cudaError_t sgemm_1d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
  const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  sgemm_1d_blocktile_kernel<BM, BN, BK, TM><<<grid, BM * BN / TM>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

// ---- Version 5: 2D register blocking --------------------------------------------------------------

// Block tile BM x BN, K step BK, each thread a TM x TN block of C. Per k, a thread loads TM
// values of A and TN of B into registers and does TM * TN multiply-adds with them.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_2d_blocktile_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                              float beta, float* C, int ldc) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0, "whole tile elements per thread");
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int thread_row = tid / (BN / TN), thread_col = tid % (BN / TN);
  float acc[TM][TN] = {};
  float reg_m[TM], reg_n[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < BM * BK / kThreads; ++i) {
      const int f = tid + i * kThreads;
      const int r = f / BK, k = f % BK;
      const int gr = row0 + r, gk = k0 + k;
      As[f] = gr < M && gk < K ? A[static_cast<std::size_t>(gr) * lda + gk] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / kThreads; ++i) {
      const int f = tid + i * kThreads;
      const int k = f / BN, c = f % BN;
      const int gk = k0 + k, gc = col0 + c;
      Bs[f] = gk < K && gc < N ? B[static_cast<std::size_t>(gk) * ldb + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < BK; ++d) {
#pragma unroll
      for (int i = 0; i < TM; ++i) reg_m[i] = As[(thread_row * TM + i) * BK + d];
#pragma unroll
      for (int j = 0; j < TN; ++j) reg_n[j] = Bs[d * BN + thread_col * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += reg_m[i] * reg_n[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + thread_row * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + thread_col * TN + j;
      if (r < M && c < N) {
        float* out = &C[static_cast<std::size_t>(r) * ldc + c];
        *out = scaled(alpha, acc[i][j], beta, out);
      }
    }
  }
}

cudaError_t sgemm_2d_blocktile(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                               float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  sgemm_2d_blocktile_kernel<BM, BN, BK, TM, TN>
      <<<grid, (BM / TM) * (BN / TN)>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

// ---- Version 6 and final: vectorized loads -----------------------------------------------------------

// Four consecutive floats of row r of X (columns c .. c+3), zeros outside rows x cols. One
// 16-byte load when the leading dimension allows it (vec: ld % 4 == 0 and X 16-byte aligned,
// so X[r * ld + c] is aligned for c % 4 == 0) and all four are inside the matrix.
__device__ inline float4 load4(const float* X, int ld, bool vec, int r, int c, int rows, int cols) {
  if (r >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float* p = &X[static_cast<std::size_t>(r) * ld + c];
  if (vec && c + 3 < cols) return *reinterpret_cast<const float4*>(p);
  return make_float4(c < cols ? p[0] : 0.0f, c + 1 < cols ? p[1] : 0.0f, c + 2 < cols ? p[2] : 0.0f,
                     c + 3 < cols ? p[3] : 0.0f);
}

// Version 5 with float4 traffic: the A tile is stored transposed (As[k * BM + m]), so that a
// thread's TM values of A for one k are consecutive and, like its TN values of B, come from
// shared memory in float4 loads; C is read and written in float4s where aligned.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_vectorized_kernel(int M, int N, int K, float alpha, const float* A, int lda, bool vec_a, const float* B,
                            int ldb, bool vec_b, float beta, float* C, int ldc, bool vec_c) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "float4 tiles");
  static_assert((BM * BK / 4) % kThreads == 0 && (BK * BN / 4) % kThreads == 0, "whole float4s per thread");
  __shared__ __align__(16) float As[BK * BM];  // transposed: As[k * BM + m]
  __shared__ __align__(16) float Bs[BK * BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int thread_row = tid / (BN / TN), thread_col = tid % (BN / TN);
  float acc[TM][TN] = {};
  float reg_m[TM], reg_n[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < BM * BK / 4 / kThreads; ++i) {
      const int f = tid + i * kThreads;
      const int r = f / (BK / 4), k = (f % (BK / 4)) * 4;
      const float4 v = load4(A, lda, vec_a, row0 + r, k0 + k, M, K);
      As[(k + 0) * BM + r] = v.x;
      As[(k + 1) * BM + r] = v.y;
      As[(k + 2) * BM + r] = v.z;
      As[(k + 3) * BM + r] = v.w;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / 4 / kThreads; ++i) {
      const int f = tid + i * kThreads;
      const int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[k * BN + c]) = load4(B, ldb, vec_b, k0 + k, col0 + c, K, N);
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < BK; ++d) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 a = *reinterpret_cast<const float4*>(&As[d * BM + thread_row * TM + i]);
        reg_m[i] = a.x, reg_m[i + 1] = a.y, reg_m[i + 2] = a.z, reg_m[i + 3] = a.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 b = *reinterpret_cast<const float4*>(&Bs[d * BN + thread_col * TN + j]);
        reg_n[j] = b.x, reg_n[j + 1] = b.y, reg_n[j + 2] = b.z, reg_n[j + 3] = b.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += reg_m[i] * reg_n[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + thread_row * TM + i;
    if (r >= M) break;
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const int c = col0 + thread_col * TN + j;
      float* out = &C[static_cast<std::size_t>(r) * ldc + c];
      if (vec_c && c + 3 < N) {
        float4 v = make_float4(alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2], alpha * acc[i][j + 3]);
        if (beta != 0.0f) {
          const float4 old = *reinterpret_cast<const float4*>(out);
          v.x += beta * old.x, v.y += beta * old.y, v.z += beta * old.z, v.w += beta * old.w;
        }
        *reinterpret_cast<float4*>(out) = v;
      } else {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          if (c + jj < N) out[jj] = scaled(alpha, acc[i][j + jj], beta, &out[jj]);
        }
      }
    }
  }
}

namespace {

template <int BM, int BN, int BK, int TM, int TN>
cudaError_t launch_vectorized(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                              float beta, float* C, int ldc) {
  if (M == 0 || N == 0) return cudaSuccess;
  const bool vec_a = lda % 4 == 0 && aligned16(A);
  const bool vec_b = ldb % 4 == 0 && aligned16(B);
  const bool vec_c = ldc % 4 == 0 && aligned16(C);
  const dim3 grid(ceil_div(N, BN), ceil_div(M, BM));
  sgemm_vectorized_kernel<BM, BN, BK, TM, TN>
      <<<grid, (BM / TM) * (BN / TN)>>>(M, N, K, alpha, A, lda, vec_a, B, ldb, vec_b, beta, C, ldc, vec_c);
  return cudaGetLastError();
}

}  // namespace

cudaError_t sgemm_vectorized(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
  return launch_vectorized<128, 128, 8, 8, 8>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

cudaError_t sgemm(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                  float* C, int ldc) {
  return launch_vectorized<128, 128, 16, 8, 8>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
