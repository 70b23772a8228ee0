// Lab 08 reference solution: attention, unfused, fused (fp32), fused on tensor cores (bf16 and
// fp16 through nvcuda::wmma) and the fused backward.
//
// Every fused kernel works in the log2 domain: scores are multiplied by scale * log2(e) so that
// exp2f() replaces expf(); L = ln(2) * (m + log2(l)) at the end.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "attention.h"
#include "gemm.h"               // lab 05: sgemm()
#include "softmax_layernorm.h"  // lab 06: softmax_forward()

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

bool valid(const AttentionShape& s) {
  return s.batch >= 1 && s.heads >= 1 && s.tq >= 1 && s.tk >= 1 && (s.d == 32 || s.d == 64 || s.d == 128) &&
         (s.causal == 0 || s.causal == 1);
}

// The last key (exclusive) that query rows [0, row_end) may see: the causal mask lets row i see
// keys j <= i + (tk - tq).
__host__ __device__ inline int key_end(int row_end, int tq, int tk, int causal) {
  if (!causal) return tk;
  const int end = row_end + (tk - tq);
  return end < 0 ? 0 : (end < tk ? end : tk);
}

// ---- Version 1: unfused -------------------------------------------------------------------------

// kt (d x tk) = k^T (k is tk x d), through a padded 32 x 32 shared tile.
__global__ void transpose_kernel(const float* __restrict__ k, float* __restrict__ kt, int tk, int d) {
  __shared__ float tile[32][33];
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int r = r0 + y, c = c0 + threadIdx.x;
    if (r < tk && c < d) tile[y][threadIdx.x] = k[static_cast<size_t>(r) * d + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int c = c0 + y, r = r0 + threadIdx.x;
    if (c < d && r < tk) kt[static_cast<size_t>(c) * tk + r] = tile[threadIdx.x][y];
  }
}

// One warp per row of the scores: masks the entries the causal mask hides (-inf) and stores the
// row's logsumexp.
__global__ void mask_and_logsumexp(float* __restrict__ s, float* __restrict__ lse, int tq, int tk, int causal) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= tq) return;
  float* x = s + static_cast<size_t>(row) * tk;
  const int end = key_end(row + 1, tq, tk, causal);
  float m = -INFINITY;
  for (int j = lane; j < tk; j += 32) {
    if (j >= end) x[j] = -INFINITY;
    else m = fmaxf(m, x[j]);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float sum = 0.0f;
  if (m != -INFINITY)
    for (int j = lane; j < end; j += 32) sum += expf(x[j] - m);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) lse[row] = m == -INFINITY ? -INFINITY : m + logf(sum);
}

}  // namespace

cudaError_t attention_unfused(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape s, float* workspace) {
  if (!valid(s)) return cudaErrorInvalidValue;
  const float scale = 1.0f / sqrtf(static_cast<float>(s.d));
  const auto [scores, probs, kt] = unfused_workspace(workspace, s);
  for (int bh = 0; bh < s.batch * s.heads; ++bh) {
    const float* qh = q + static_cast<size_t>(bh) * s.tq * s.d;
    const float* kh = k + static_cast<size_t>(bh) * s.tk * s.d;
    const float* vh = v + static_cast<size_t>(bh) * s.tk * s.d;
    float* oh = o + static_cast<size_t>(bh) * s.tq * s.d;
    transpose_kernel<<<dim3((s.d + 31) / 32, (s.tk + 31) / 32), dim3(32, 8)>>>(kh, kt, s.tk, s.d);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    if (cudaError_t e = sgemm(s.tq, s.tk, s.d, scale, qh, s.d, kt, s.tk, 0.0f, scores, s.tk); e != cudaSuccess)
      return e;
    mask_and_logsumexp<<<(s.tq + 3) / 4, 128>>>(scores, lse + static_cast<size_t>(bh) * s.tq, s.tq, s.tk, s.causal);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    if (cudaError_t e = softmax_forward(scores, probs, s.tq, s.tk); e != cudaSuccess) return e;
    if (cudaError_t e = sgemm(s.tq, s.d, s.tk, 1.0f, probs, s.tk, vh, s.d, 0.0f, oh, s.d); e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

// ---- Versions 2 and 3: fused, fp32 -----------------------------------------------------------------

namespace {

constexpr int kFwdRows = 64;  // query rows per block
constexpr int kFwdKeys = 32;  // keys per tile
constexpr int kFwdThreads = 256;

template <int D>
constexpr size_t fused_forward_smem() {
  return sizeof(float) * (kFwdRows * (D + 1) + kFwdKeys * (D + 1) + kFwdKeys * D);
}

// Copies rows [row0, row0 + rows) of a (n x D) matrix into shared memory with leading dimension
// ld, zero rows past n, multiplying by mul. 16-byte loads; D is a multiple of 4.
template <int D>
__device__ void load_rows(float* dst, int ld, const float* __restrict__ src, int row0, int rows, int n, float mul) {
  for (int e = threadIdx.x * 4; e < rows * D; e += blockDim.x * 4) {
    const int r = e / D, c = e % D;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row0 + r < n) x = *reinterpret_cast<const float4*>(src + static_cast<size_t>(row0 + r) * D + c);
    float* d = dst + r * ld + c;
    d[0] = x.x * mul;
    d[1] = x.y * mul;
    d[2] = x.z * mul;
    d[3] = x.w * mul;
  }
}

// Block: 64 query rows of one (b, h); thread t owns row t / 4 with its quad (4 threads): each
// computes 8 of the tile's 32 scores and D / 4 of the output columns (c = quad lane + 4 cc).
template <int D>
__global__ void __launch_bounds__(kFwdThreads) fused_forward_kernel(const float* __restrict__ q,
                                                                    const float* __restrict__ k,
                                                                    const float* __restrict__ v, float* __restrict__ o,
                                                                    float* __restrict__ lse, AttentionShape s) {
  extern __shared__ float smem[];
  float* qs = smem;                          // [64][D + 1], pre-scaled by scale * log2(e)
  float* ks = qs + kFwdRows * (D + 1);       // [32][D + 1]
  float* vs = ks + kFwdKeys * (D + 1);       // [32][D]
  const int bh = blockIdx.y, q0 = blockIdx.x * kFwdRows;
  const float* qh = q + static_cast<size_t>(bh) * s.tq * D;
  const float* kh = k + static_cast<size_t>(bh) * s.tk * D;
  const float* vh = v + static_cast<size_t>(bh) * s.tk * D;
  const int lane = threadIdx.x & 31, quad = threadIdx.x & 3;
  const int r = threadIdx.x >> 2, i = q0 + r;
  const int offset = s.tk - s.tq;
  const float scale_log2 = kLog2e / sqrtf(static_cast<float>(D));

  load_rows<D>(qs, D + 1, qh, q0, kFwdRows, s.tq, scale_log2);
  float acc[D / 4];
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) acc[cc] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int end = key_end(q0 + kFwdRows, s.tq, s.tk, s.causal);  // causal: later tiles are all masked

  for (int kv0 = 0; kv0 < end; kv0 += kFwdKeys) {
    __syncthreads();  // the previous tile is no longer read
    load_rows<D>(ks, D + 1, kh, kv0, kFwdKeys, s.tk, 1.0f);
    load_rows<D>(vs, D, vh, kv0, kFwdKeys, s.tk, 1.0f);
    __syncthreads();
    float sc[8];
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) sc[jj] = 0.0f;
    const float* qrow = qs + r * (D + 1);
    const float* krow = ks + (quad * 8) * (D + 1);
#pragma unroll 4
    for (int c = 0; c < D; ++c) {
      const float qc = qrow[c];
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) sc[jj] = fmaf(qc, krow[jj * (D + 1) + c], sc[jj]);
    }
    // Mask only tiles that reach past the keys or straddle the diagonal.
    const bool straddles = kv0 + kFwdKeys > s.tk || (s.causal && kv0 + kFwdKeys - 1 > q0 + offset);
    if (straddles) {
      const int row_end = s.causal ? i + offset + 1 : s.tk;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int j = kv0 + quad * 8 + jj;
        if (j >= s.tk || j >= row_end) sc[jj] = -INFINITY;
      }
    }
    float mt = sc[0];
#pragma unroll
    for (int jj = 1; jj < 8; ++jj) mt = fmaxf(mt, sc[jj]);
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
    const float m_new = fmaxf(m, mt);
    const float alpha = m == -INFINITY ? 0.0f : exp2f(m - m_new);
    float rowsum = 0.0f;
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      sc[jj] = m_new == -INFINITY ? 0.0f : exp2f(sc[jj] - m_new);
      rowsum += sc[jj];
    }
    rowsum += __shfl_xor_sync(0xffffffffu, rowsum, 1);
    rowsum += __shfl_xor_sync(0xffffffffu, rowsum, 2);
    l = l * alpha + rowsum;
    m = m_new;
#pragma unroll
    for (int cc = 0; cc < D / 4; ++cc) acc[cc] *= alpha;
#pragma unroll
    for (int j = 0; j < kFwdKeys; ++j) {
      const float p = __shfl_sync(0xffffffffu, sc[j % 8], (lane & ~3) | (j / 8));
      const float* vrow = vs + j * D + quad;
#pragma unroll
      for (int cc = 0; cc < D / 4; ++cc) acc[cc] = fmaf(p, vrow[4 * cc], acc[cc]);
    }
  }

  // O through shared memory (the Q tile is free now), so a warp writes whole rows.
  __syncthreads();
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) qs[r * (D + 1) + quad + 4 * cc] = acc[cc] * inv;
  if (quad == 0 && i < s.tq)
    lse[static_cast<size_t>(bh) * s.tq + i] = m == -INFINITY ? -INFINITY : (m + log2f(l)) * kLn2;
  __syncthreads();
  float* oh = o + static_cast<size_t>(bh) * s.tq * D;
  for (int e = threadIdx.x; e < kFwdRows * D; e += blockDim.x) {
    const int rr = e / D, c = e % D;
    if (q0 + rr < s.tq) oh[static_cast<size_t>(q0 + rr) * D + c] = qs[rr * (D + 1) + c];
  }
}

template <int D>
cudaError_t launch_fused_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                                 AttentionShape s) {
  constexpr size_t smem = fused_forward_smem<D>();
  if (cudaError_t e = cudaFuncSetAttribute(fused_forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess)
    return e;
  fused_forward_kernel<D><<<dim3((s.tq + kFwdRows - 1) / kFwdRows, s.batch * s.heads), kFwdThreads, smem>>>(
      q, k, v, o, lse, s);
  return cudaGetLastError();
}

}  // namespace

cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape s) {
  if (!valid(s)) return cudaErrorInvalidValue;
  switch (s.d) {
    case 32: return launch_fused_forward<32>(q, k, v, o, lse, s);
    case 64: return launch_fused_forward<64>(q, k, v, o, lse, s);
    default: return launch_fused_forward<128>(q, k, v, o, lse, s);
  }
}

// ---- Version 4: fused on tensor cores (bf16, fp16) ------------------------------------------------------

namespace {

namespace wmma = nvcuda::wmma;

// Block: 128 query rows of one (b, h), 8 warps x 16 rows, so that every K/V tile brought from
// global memory feeds eight warps' products. Each warp keeps its Q fragments, its D / 16 output
// accumulators and its partial row sums in registers for the whole key loop; only P (the matrix_a
// of P V) and the row statistics pass through the warp's shared scratch.
constexpr int kTcWarps = 8;
constexpr int kTcRows = 16 * kTcWarps;  // query rows per block
constexpr int kTcKeys = 64;             // keys per tile
constexpr int kTcThreads = 32 * kTcWarps;

template <int D>
struct TcLayout {
  static constexpr int ldh = D + 8;        // Q, K, V tiles (16-bit elements)
  static constexpr int ldp = kTcKeys + 8;  // a warp's probabilities (16-bit)
  static constexpr int ldf = 16 + 4;       // a warp's 16 x 16 float scratch tile
  static constexpr size_t q_bytes = 2 * kTcRows * ldh, kv_bytes = 2 * kTcKeys * ldh;
  static constexpr size_t p_bytes = 2 * 16 * ldp, f_bytes = 4 * 16 * ldf, stat_bytes = 8 * 16;
  static constexpr size_t warp_bytes = p_bytes + f_bytes + stat_bytes;  // multiples of 32 bytes
  // Q; K and V of tile t in buffer t % 2 (K0, V0, K1, V1); each warp's scratch.
  static constexpr size_t bytes = q_bytes + 4 * kv_bytes + kTcWarps * warp_bytes;
};

template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline __half from_float<__half>(float x) {
  return __float2half(x);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

// rows x D tile of 16-bit elements from global (row stride D) into shared (row stride ld), 16 bytes
// at a time; rows past n are zero.
template <int D, class T>
__device__ void load_tile16(T* dst, int ld, const T* __restrict__ src, int row0, int rows, int n) {
  constexpr int per_row = D / 8;  // 16-byte chunks
  for (int e = threadIdx.x; e < rows * per_row; e += blockDim.x) {
    const int r = e / per_row, c = (e % per_row) * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (row0 + r < n) x = *reinterpret_cast<const uint4*>(src + static_cast<size_t>(row0 + r) * D + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = x;
  }
}

// A K/V tile in flight: the thread's 16-byte pieces of the kTcKeys x D tiles of K and V. They are
// loaded from global memory into registers before the warps compute on the current tile and stored
// to the other shared buffer after, so the loads' latency hides behind the tile's math. Piece u
// of thread t is chunk e = t + u * kTcThreads: row e / (D / 8), columns 8 (e % (D / 8)) + 0..7, so
// consecutive threads read consecutive 16 bytes. Rows past n are zero.
template <int D>
struct KvPieces {
  static constexpr int per_row = D / 8, count = kTcKeys * per_row / kTcThreads;
  uint4 k[count], v[count];
};

template <int D, class T>
__device__ void fetch_kv(KvPieces<D>& x, const T* __restrict__ kh, const T* __restrict__ vh, int kv0, int n) {
  constexpr int per_row = KvPieces<D>::per_row;
#pragma unroll
  for (int u = 0; u < KvPieces<D>::count; ++u) {
    const int e = threadIdx.x + u * kTcThreads, r = kv0 + e / per_row, c = (e % per_row) * 8;
    x.k[u] = x.v[u] = make_uint4(0, 0, 0, 0);
    if (r < n) {
      x.k[u] = *reinterpret_cast<const uint4*>(kh + static_cast<size_t>(r) * D + c);
      x.v[u] = *reinterpret_cast<const uint4*>(vh + static_cast<size_t>(r) * D + c);
    }
  }
}

template <int D, class T, int N>
__device__ void store_tile16(T* dst, int ld, const uint4 (&x)[N]) {
  constexpr int per_row = D / 8;
#pragma unroll
  for (int u = 0; u < N; ++u) {
    const int e = threadIdx.x + u * kTcThreads, r = e / per_row, c = (e % per_row) * 8;
    *reinterpret_cast<uint4*>(dst + r * ld + c) = x[u];
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kTcThreads, 1) tc_forward_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                                   const T* __restrict__ v, T* __restrict__ o,
                                                                   float* __restrict__ lse, AttentionShape s) {
  using L = TcLayout<D>;
  using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  constexpr int kE = Acc::num_elements;
  extern __shared__ __align__(128) unsigned char smem_tc[];
  T* qs = reinterpret_cast<T*>(smem_tc);
  auto k_buf = [&](int b) { return reinterpret_cast<T*>(smem_tc + L::q_bytes + (2 * b) * L::kv_bytes); };
  auto v_buf = [&](int b) { return reinterpret_cast<T*>(smem_tc + L::q_bytes + (2 * b + 1) * L::kv_bytes); };
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  unsigned char* mine = smem_tc + L::q_bytes + 4 * L::kv_bytes + warp * L::warp_bytes;
  T* ps = reinterpret_cast<T*>(mine);
  float* fs = reinterpret_cast<float*>(mine + L::p_bytes);
  float2* stat = reinterpret_cast<float2*>(mine + L::p_bytes + L::f_bytes);

  const int bh = blockIdx.y, q0 = blockIdx.x * kTcRows, w0 = q0 + warp * 16;  // w0: the warp's first row
  const T* qh = q + static_cast<size_t>(bh) * s.tq * D;
  const T* kh = k + static_cast<size_t>(bh) * s.tk * D;
  const T* vh = v + static_cast<size_t>(bh) * s.tk * D;
  const float scale_log2 = kLog2e / sqrtf(static_cast<float>(D));
  const int offset = s.tk - s.tq;
  const int end = key_end(q0 + kTcRows, s.tq, s.tk, s.causal), tiles = (end + kTcKeys - 1) / kTcKeys;
  // Per-row work: lanes 2 rr and 2 rr + 1 own row rr of the warp's 16, each reading 8 of the 16
  // columns of the scratch tile (conflict-free with ldf = 20); m is the row's running maximum
  // (log2 domain), kept by both lanes.
  const int rr = lane >> 1, half = lane & 1;
  float m = -INFINITY;

  // Which (row, column) an accumulator element holds is unspecified, but all float accumulators of
  // one shape map elements alike: loading the tile whose entry (r, c) is 16 r + c tells each lane
  // where its elements lie, for the masks and the per-row statistics.
  Acc acc;
  for (int e = lane; e < 256; e += 32) fs[(e / 16) * L::ldf + e % 16] = static_cast<float>(e);
  __syncwarp();
  wmma::load_matrix_sync(acc, fs, L::ldf, wmma::mem_row_major);
  int pos[kE];
#pragma unroll
  for (int i = 0; i < kE; ++i) pos[i] = static_cast<int>(acc.x[i]);

  KvPieces<D> next;
  load_tile16<D>(qs, L::ldh, qh, q0, kTcRows, s.tq);
  if (tiles > 0) {
    fetch_kv<D>(next, kh, vh, 0, s.tk);
    store_tile16<D>(k_buf(0), L::ldh, next.k);
    store_tile16<D>(v_buf(0), L::ldh, next.v);
  }
  __syncthreads();  // Q and the first K/V tile are in shared memory; every lane has read its positions

  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa, fq[D / 16];
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fkt;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fv;
  Acc out[D / 16], lsum;  // O and the partial sums l of the elements' rows, both unnormalized
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    wmma::load_matrix_sync(fq[kk], qs + (warp * 16) * L::ldh + kk * 16, L::ldh);
    wmma::fill_fragment(out[kk], 0.0f);
  }
  wmma::fill_fragment(lsum, 0.0f);

  for (int t = 0; t < tiles; ++t) {
    const int kv0 = t * kTcKeys;
    const T* ks = k_buf(t & 1);
    const T* vs = v_buf(t & 1);
    if (t + 1 < tiles) fetch_kv<D>(next, kh, vh, kv0 + kTcKeys, s.tk);  // in flight during the math below

    // S = Q K^T for the warp's 16 rows: K stored [key][d] is K^T in column-major order.
    Acc sc[kTcKeys / 16];
#pragma unroll
    for (int n = 0; n < kTcKeys / 16; ++n) {
      wmma::fill_fragment(sc[n], 0.0f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::load_matrix_sync(fkt, ks + (n * 16) * L::ldh + kk * 16, L::ldh);
        wmma::mma_sync(sc[n], fq[kk], fkt, sc[n]);
      }
    }
    // Mask the keys past Tk and, causal, past each row's diagonal: only tiles that straddle them.
    if (kv0 + kTcKeys > s.tk || (s.causal && kv0 + kTcKeys - 1 > w0 + offset)) {
#pragma unroll
      for (int n = 0; n < kTcKeys / 16; ++n)
#pragma unroll
        for (int i = 0; i < kE; ++i) {
          const int j = kv0 + n * 16 + (pos[i] & 15), row = w0 + (pos[i] >> 4);
          if (j >= s.tk || (s.causal && j > row + offset)) sc[n].x[i] = -INFINITY;
        }
    }
    // Row maxima: each lane's elementwise maximum over the four fragments goes to the scratch, the
    // row's two lanes reduce it. Then the row's new maximum, and alpha = exp2(m_old - m_new).
#pragma unroll
    for (int i = 0; i < kE; ++i) acc.x[i] = fmaxf(fmaxf(sc[0].x[i], sc[1].x[i]), fmaxf(sc[2].x[i], sc[3].x[i]));
    wmma::store_matrix_sync(fs, acc, L::ldf, wmma::mem_row_major);
    __syncwarp();
    const float4 a = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half);
    const float4 b = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half + 4);
    float mt = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)), fmaxf(fmaxf(b.x, b.y), fmaxf(b.z, b.w)));
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
    const float m_new = fmaxf(m, mt * scale_log2);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row that saw only masked keys: p = 0
    const float alpha = exp2f(m - m_use);
    m = m_new;
    if (half == 0) stat[rr] = make_float2(m_use, alpha);
    const bool rescale = __any_sync(0xffffffffu, alpha != 1.0f);  // once the maxima settle, rarely
    __syncwarp();
    // P = exp2(S scale log2(e) - m) element by element, in fp32 for l and as 16-bit values into
    // the scratch (the matrix_a of P V); O and l are rescaled by their rows' alpha.
    float m_el[kE], alpha_el[kE];
#pragma unroll
    for (int i = 0; i < kE; ++i) {
      const float2 st = stat[pos[i] >> 4];
      m_el[i] = st.x;
      alpha_el[i] = st.y;
    }
    if (rescale) {
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn)
#pragma unroll
        for (int i = 0; i < kE; ++i) out[dn].x[i] *= alpha_el[i];
    }
#pragma unroll
    for (int i = 0; i < kE; ++i) {
      float sum = lsum.x[i] * alpha_el[i];
#pragma unroll
      for (int n = 0; n < kTcKeys / 16; ++n) {
        const float p = exp2f(fmaf(sc[n].x[i], scale_log2, -m_el[i]));
        sum += p;
        ps[(pos[i] >> 4) * L::ldp + n * 16 + (pos[i] & 15)] = from_float<T>(p);
      }
      lsum.x[i] = sum;
    }
    __syncwarp();
    // O += P V, the accumulators staying in registers.
#pragma unroll
    for (int kk = 0; kk < kTcKeys / 16; ++kk) {
      wmma::load_matrix_sync(fa, ps + kk * 16, L::ldp);
#pragma unroll
      for (int dn = 0; dn < D / 16; ++dn) {
        wmma::load_matrix_sync(fv, vs + (kk * 16) * L::ldh + dn * 16, L::ldh);
        wmma::mma_sync(out[dn], fa, fv, out[dn]);
      }
    }
    if (t + 1 < tiles) {  // into the buffer every warp finished reading before the last barrier
      store_tile16<D>(k_buf((t + 1) & 1), L::ldh, next.k);
      store_tile16<D>(v_buf((t + 1) & 1), L::ldh, next.v);
    }
    __syncthreads();  // the next tile is stored, and every warp is done with this one
  }

  // l of each row: the lanes' partial sums, added up through the scratch as the maxima were.
  wmma::store_matrix_sync(fs, lsum, L::ldf, wmma::mem_row_major);
  __syncwarp();
  const float4 a = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half);
  const float4 b = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half + 4);
  float l = (a.x + a.y) + (a.z + a.w) + ((b.x + b.y) + (b.z + b.w));
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  const int i = w0 + rr;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  if (half == 0 && i < s.tq)
    lse[static_cast<size_t>(bh) * s.tq + i] = m == -INFINITY ? -INFINITY : (m + log2f(l)) * kLn2;
  // O / l, 16 columns at a time through the scratch: the row's two lanes write 16 bytes each.
  T* orow = o + (static_cast<size_t>(bh) * s.tq + i) * D + 8 * half;
#pragma unroll
  for (int dn = 0; dn < D / 16; ++dn) {
    __syncwarp();  // every lane has read the scratch
    wmma::store_matrix_sync(fs, out[dn], L::ldf, wmma::mem_row_major);
    __syncwarp();
    const float4 x = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half);
    const float4 y = *reinterpret_cast<const float4*>(fs + rr * L::ldf + 8 * half + 4);
    alignas(16) T h[8] = {from_float<T>(x.x * inv), from_float<T>(x.y * inv), from_float<T>(x.z * inv),
                          from_float<T>(x.w * inv), from_float<T>(y.x * inv), from_float<T>(y.y * inv),
                          from_float<T>(y.z * inv), from_float<T>(y.w * inv)};
    if (i < s.tq) *reinterpret_cast<uint4*>(orow + dn * 16) = *reinterpret_cast<const uint4*>(h);
  }
}

template <class T, int D>
cudaError_t launch_tc_forward(const T* q, const T* k, const T* v, T* o, float* lse, AttentionShape s) {
  constexpr size_t smem = TcLayout<D>::bytes;
  if (cudaError_t e = cudaFuncSetAttribute(tc_forward_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess)
    return e;
  tc_forward_kernel<T, D><<<dim3((s.tq + kTcRows - 1) / kTcRows, s.batch * s.heads), kTcThreads, smem>>>(
      q, k, v, o, lse, s);
  return cudaGetLastError();
}

template <class T>
cudaError_t tc_forward(const T* q, const T* k, const T* v, T* o, float* lse, AttentionShape s) {
  if (!valid(s)) return cudaErrorInvalidValue;
  switch (s.d) {
    case 32: return launch_tc_forward<T, 32>(q, k, v, o, lse, s);
    case 64: return launch_tc_forward<T, 64>(q, k, v, o, lse, s);
    default: return launch_tc_forward<T, 128>(q, k, v, o, lse, s);
  }
}

}  // namespace

cudaError_t attention_forward_bf16(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                   __nv_bfloat16* o, float* lse, AttentionShape s) {
  return tc_forward(q, k, v, o, lse, s);
}

cudaError_t attention_forward_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                                   AttentionShape s) {
  return tc_forward(q, k, v, o, lse, s);
}

// ---- Version 5: fused backward, fp32 --------------------------------------------------------------------

namespace {

constexpr int kBwdTile = 32;  // query rows and keys per tile
constexpr int kBwdThreads = 128;

template <int D>
constexpr size_t backward_smem() {
  return sizeof(float) * 4 * kBwdTile * (D + 1);
}

// Delta[i] = sum_c dO[i][c] * O[i][c]: one warp per row.
__global__ void backward_delta(const float* __restrict__ o, const float* __restrict__ dout, float* __restrict__ delta,
                               int rows, int d) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int c = lane; c < d; c += 32) sum += dout[static_cast<size_t>(row) * d + c] * o[static_cast<size_t>(row) * d + c];
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) delta[row] = sum;
}

// Writes a 32 x D tile (staged at `tile`, leading dimension D + 1, scaled by mul) to rows
// [row0, row0 + 32) of dst, whole rows per warp.
template <int D>
__device__ void store_rows(float* __restrict__ dst, const float* tile, int row0, int n, float mul) {
  for (int e = threadIdx.x; e < kBwdTile * D; e += blockDim.x) {
    const int r = e / D, c = e % D;
    if (row0 + r < n) dst[static_cast<size_t>(row0 + r) * D + c] = tile[r * (D + 1) + c] * mul;
  }
}

// x[n] = a . b_n and y[n] = c . e_n for n < 8, b_n and e_n the 8 consecutive rows (leading dimension
// D + 1) from b and e: the two score-like products the backward kernels recompute per tile.
template <int D>
__device__ inline void dot8_pair(const float* a, const float* b, const float* c, const float* e, float* x,
                                 float* y) {
#pragma unroll
  for (int n = 0; n < 8; ++n) x[n] = y[n] = 0.0f;
#pragma unroll 4
  for (int col = 0; col < D; ++col) {
    const float ac = a[col], cc = c[col];
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      x[n] = fmaf(ac, b[n * (D + 1) + col], x[n]);
      y[n] = fmaf(cc, e[n * (D + 1) + col], y[n]);
    }
  }
}

// dK and dV for 32 keys of one (b, h): thread t owns key t / 4 and, with its quad, 8 of each
// query tile's 32 rows and D / 4 of the columns (c = quad lane + 4 cc).
template <int D>
__global__ void __launch_bounds__(kBwdThreads) backward_dkdv(const float* __restrict__ q, const float* __restrict__ k,
                                                             const float* __restrict__ v, const float* __restrict__ dout,
                                                             const float* __restrict__ lse,
                                                             const float* __restrict__ delta, float* __restrict__ dk,
                                                             float* __restrict__ dv, AttentionShape s) {
  extern __shared__ float smem[];
  float* ks = smem;                       // [32][D + 1]
  float* vs = ks + kBwdTile * (D + 1);
  float* qs = vs + kBwdTile * (D + 1);
  float* dos = qs + kBwdTile * (D + 1);
  const int bh = blockIdx.y, k0 = blockIdx.x * kBwdTile;
  const size_t qoff = static_cast<size_t>(bh) * s.tq * D, koff = static_cast<size_t>(bh) * s.tk * D;
  const int lane = threadIdx.x & 31, quad = threadIdx.x & 3, kj = threadIdx.x >> 2, j = k0 + kj;
  const int offset = s.tk - s.tq;
  const float scale = 1.0f / sqrtf(static_cast<float>(D)), scale_log2 = scale * kLog2e;

  load_rows<D>(ks, D + 1, k + koff, k0, kBwdTile, s.tk, 1.0f);
  load_rows<D>(vs, D + 1, v + koff, k0, kBwdTile, s.tk, 1.0f);
  float dk_acc[D / 4], dv_acc[D / 4];
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) dk_acc[cc] = dv_acc[cc] = 0.0f;
  // Causal: query i sees key j when i >= j - offset; earlier query tiles see none of these keys.
  int first = s.causal ? k0 - offset : 0;
  first = first < 0 ? 0 : (first / kBwdTile) * kBwdTile;

  for (int i0 = first; i0 < s.tq; i0 += kBwdTile) {
    __syncthreads();
    load_rows<D>(qs, D + 1, q + qoff, i0, kBwdTile, s.tq, 1.0f);
    load_rows<D>(dos, D + 1, dout + qoff, i0, kBwdTile, s.tq, 1.0f);
    __syncthreads();
    float p[8], ds[8];  // scores and dP of the quad's 8 query rows, then P and dS
    dot8_pair<D>(ks + kj * (D + 1), qs + (quad * 8) * (D + 1), vs + kj * (D + 1), dos + (quad * 8) * (D + 1), p, ds);
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const int i = i0 + quad * 8 + ii;
      const bool visible = i < s.tq && j < s.tk && (!s.causal || j <= i + offset);
      const size_t row = static_cast<size_t>(bh) * s.tq + (i < s.tq ? i : 0);
      p[ii] = visible ? exp2f(p[ii] * scale_log2 - lse[row] * kLog2e) : 0.0f;
      ds[ii] = p[ii] * (ds[ii] - (visible ? delta[row] : 0.0f));
    }
#pragma unroll 4
    for (int t = 0; t < kBwdTile; ++t) {
      const int src = (lane & ~3) | (t / 8);
      const float pt = __shfl_sync(0xffffffffu, p[t % 8], src);
      const float dst = __shfl_sync(0xffffffffu, ds[t % 8], src);
      const float* dorow = dos + t * (D + 1) + quad;
      const float* qrow = qs + t * (D + 1) + quad;
#pragma unroll
      for (int cc = 0; cc < D / 4; ++cc) {
        dv_acc[cc] = fmaf(pt, dorow[4 * cc], dv_acc[cc]);
        dk_acc[cc] = fmaf(dst, qrow[4 * cc], dk_acc[cc]);
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) {
    qs[kj * (D + 1) + quad + 4 * cc] = dk_acc[cc];
    dos[kj * (D + 1) + quad + 4 * cc] = dv_acc[cc];
  }
  __syncthreads();
  store_rows<D>(dk + koff, qs, k0, s.tk, scale);
  store_rows<D>(dv + koff, dos, k0, s.tk, 1.0f);
}

// dQ for 32 query rows of one (b, h): thread t owns row t / 4 and, with its quad, 8 of each key
// tile's 32 keys and D / 4 of the columns.
template <int D>
__global__ void __launch_bounds__(kBwdThreads) backward_dq(const float* __restrict__ q, const float* __restrict__ k,
                                                           const float* __restrict__ v, const float* __restrict__ dout,
                                                           const float* __restrict__ lse,
                                                           const float* __restrict__ delta, float* __restrict__ dq,
                                                           AttentionShape s) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* dos = qs + kBwdTile * (D + 1);
  float* ks = dos + kBwdTile * (D + 1);
  float* vs = ks + kBwdTile * (D + 1);
  const int bh = blockIdx.y, i0 = blockIdx.x * kBwdTile;
  const size_t qoff = static_cast<size_t>(bh) * s.tq * D, koff = static_cast<size_t>(bh) * s.tk * D;
  const int lane = threadIdx.x & 31, quad = threadIdx.x & 3, qi = threadIdx.x >> 2, i = i0 + qi;
  const int offset = s.tk - s.tq;
  const float scale = 1.0f / sqrtf(static_cast<float>(D)), scale_log2 = scale * kLog2e;

  load_rows<D>(qs, D + 1, q + qoff, i0, kBwdTile, s.tq, 1.0f);
  load_rows<D>(dos, D + 1, dout + qoff, i0, kBwdTile, s.tq, 1.0f);
  const size_t row = static_cast<size_t>(bh) * s.tq + (i < s.tq ? i : 0);
  const float lse2 = i < s.tq ? lse[row] * kLog2e : 0.0f, di = i < s.tq ? delta[row] : 0.0f;
  float dq_acc[D / 4];
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) dq_acc[cc] = 0.0f;
  const int end = key_end(i0 + kBwdTile, s.tq, s.tk, s.causal);

  for (int k0 = 0; k0 < end; k0 += kBwdTile) {
    __syncthreads();
    load_rows<D>(ks, D + 1, k + koff, k0, kBwdTile, s.tk, 1.0f);
    load_rows<D>(vs, D + 1, v + koff, k0, kBwdTile, s.tk, 1.0f);
    __syncthreads();
    float p[8], ds[8];  // scores and dP of the quad's 8 keys, then P and dS
    dot8_pair<D>(qs + qi * (D + 1), ks + (quad * 8) * (D + 1), dos + qi * (D + 1), vs + (quad * 8) * (D + 1), p, ds);
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const int j = k0 + quad * 8 + jj;
      const bool visible = i < s.tq && j < s.tk && (!s.causal || j <= i + offset);
      p[jj] = visible ? exp2f(p[jj] * scale_log2 - lse2) : 0.0f;
      ds[jj] = p[jj] * (ds[jj] - di);
    }
#pragma unroll 4
    for (int t = 0; t < kBwdTile; ++t) {
      const float dst = __shfl_sync(0xffffffffu, ds[t % 8], (lane & ~3) | (t / 8));
      const float* krow = ks + t * (D + 1) + quad;
#pragma unroll
      for (int cc = 0; cc < D / 4; ++cc) dq_acc[cc] = fmaf(dst, krow[4 * cc], dq_acc[cc]);
    }
  }
  __syncthreads();
#pragma unroll
  for (int cc = 0; cc < D / 4; ++cc) ks[qi * (D + 1) + quad + 4 * cc] = dq_acc[cc];
  __syncthreads();
  store_rows<D>(dq + qoff, ks, i0, s.tq, scale);
}

template <int D>
cudaError_t launch_backward(const float* q, const float* k, const float* v, const float* dout, const float* lse,
                            const float* delta, float* dq, float* dk, float* dv, AttentionShape s) {
  constexpr size_t smem = backward_smem<D>();
  if (cudaError_t e = cudaFuncSetAttribute(backward_dkdv<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess)
    return e;
  if (cudaError_t e = cudaFuncSetAttribute(backward_dq<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess)
    return e;
  backward_dkdv<D><<<dim3((s.tk + kBwdTile - 1) / kBwdTile, s.batch * s.heads), kBwdThreads, smem>>>(
      q, k, v, dout, lse, delta, dk, dv, s);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  backward_dq<D><<<dim3((s.tq + kBwdTile - 1) / kBwdTile, s.batch * s.heads), kBwdThreads, smem>>>(
      q, k, v, dout, lse, delta, dq, s);
  return cudaGetLastError();
}

}  // namespace

cudaError_t attention_backward(const float* q, const float* k, const float* v, const float* o, const float* dout,
                               const float* lse, float* dq, float* dk, float* dv, AttentionShape s, float* workspace) {
  if (!valid(s)) return cudaErrorInvalidValue;
  const int rows = static_cast<int>(attention_rows(s));
  backward_delta<<<(rows + 3) / 4, 128>>>(o, dout, workspace, rows, s.d);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  switch (s.d) {
    case 32: return launch_backward<32>(q, k, v, dout, lse, workspace, dq, dk, dv, s);
    case 64: return launch_backward<64>(q, k, v, dout, lse, workspace, dq, dk, dv, s);
    default: return launch_backward<128>(q, k, v, dout, lse, workspace, dq, dk, dv, s);
  }
}
