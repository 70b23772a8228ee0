// Candidate kernels for lab 08's attention_forward_bf16 (see attention_candidates.h).
//
// A block owns WARPS x ROW_TILES x 16 query rows of one (b, h); warp w owns ROW_TILES tiles of 16
// rows. Per tile of KEYS keys, with g = lane / 4 and t = lane % 4 (PTX ISA, mma.m16n8k16):
//   S = Q K^T    mma.sync: A = Q (kept in registers for the whole loop when ROW_TILES = 1, else
//                ldmatrix from shared memory per tile), B = rows of K through ldmatrix.
//   softmax      in registers: a lane holds rows g and g + 8 of each 16-row tile, columns 2t and
//                2t + 1 of each 8-key group, so a row's maximum and sum need two shuffles within
//                its quad; O is rescaled element by element.
//   O += P V     S's accumulators, rounded to bf16 pairs, are P V's A fragments where they stand
//                (no shared scratch); B = rows of V through ldmatrix.trans.
// K/V tiles: cp.async (__pipeline_memcpy_async) into two stages, tile t + 1 in flight while tile t
// is computed. Shared rows are padded by 8 bf16 (16 bytes), so the 8 rows one ldmatrix matrix
// reads start in 8 different 16-byte bank groups (conflict-free).
//
// On sim there is no PTX: mma.sync and ldmatrix are emulated lane by lane from the ISA's fragment
// layouts (warp shuffles), the products summed in fp32 (the GPU's order differs; the validation
// has a tolerance).
#include "attention_candidates.h"

#include <cuda_bf16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace candidates {
namespace {

using bf16 = __nv_bfloat16;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr unsigned kFull = 0xffffffffu;

bool valid(const AttentionShape& s) {
  return s.batch >= 1 && s.heads >= 1 && s.tq >= 1 && s.tk >= 1 && (s.d == 32 || s.d == 64 || s.d == 128) &&
         (s.causal == 0 || s.causal == 1);
}

// The last key (exclusive) that query rows [0, row_end) may see (the lab's bottom-right causal mask).
__host__ __device__ inline int key_end(int row_end, int tq, int tk, int causal) {
  if (!causal) return tk;
  const int end = row_end + (tk - tq);
  return end < 0 ? 0 : (end < tk ? end : tk);
}

// ---- fragments: PTX on a GPU, emulated from the same layouts on sim --------------------------------------

// Two floats as a bf16 pair, lo in the low half (the element with the lower column).
__device__ inline uint32_t pack_bf16(float lo, float hi) {
#if defined(CUSIM)
  const bf16 a = __float2bfloat16(lo), b = __float2bfloat16(hi);
  std::uint16_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x | (static_cast<uint32_t>(y) << 16);
#else
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
#endif
}

#if defined(CUSIM)
inline float low_bf16(uint32_t x) { return __uint_as_float(x << 16); }
inline float high_bf16(uint32_t x) { return __uint_as_float(x & 0xffff0000u); }
#endif

// Four 8 x 8 bf16 matrices: lanes 8i .. 8i + 7 give the addresses of matrix i's rows; r[i] is
// matrix i's fragment, lane l holding row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const bf16* row) {
#if defined(CUSIM)
  const int lane = threadIdx.x & 31;
  const auto mine = reinterpret_cast<unsigned long long>(row);
  for (int i = 0; i < 4; ++i) {
    const auto* p = reinterpret_cast<const std::uint16_t*>(__shfl_sync(kFull, mine, 8 * i + lane / 4));
    r[i] = p[2 * (lane % 4)] | (static_cast<uint32_t>(p[2 * (lane % 4) + 1]) << 16);
  }
#else
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
#endif
}

// As ldmatrix_x4, transposed: lane l holds column l / 4 of rows 2 (l % 4) and 2 (l % 4) + 1.
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* row) {
#if defined(CUSIM)
  const int lane = threadIdx.x & 31;
  const auto mine = reinterpret_cast<unsigned long long>(row);
  for (int i = 0; i < 4; ++i) {
    const auto* p0 = reinterpret_cast<const std::uint16_t*>(__shfl_sync(kFull, mine, 8 * i + 2 * (lane % 4)));
    const auto* p1 = reinterpret_cast<const std::uint16_t*>(__shfl_sync(kFull, mine, 8 * i + 2 * (lane % 4) + 1));
    r[i] = p0[lane / 4] | (static_cast<uint32_t>(p1[lane / 4]) << 16);
  }
#else
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
#endif
}

// c += a b: a 16 x 16 (row major), b 16 x 8 (column major), c 16 x 8 fp32. Fragments (g = lane / 4,
// t = lane % 4): a[0] = (g, 2t..2t+1), a[1] = (g + 8, 2t..), a[2] = (g, 2t + 8..), a[3] = (g + 8, 2t + 8..);
// b0 = (k 2t..2t+1, n g), b1 = (k 2t + 8.., n g); c[0], c[1] = (g, 2t), (g, 2t + 1); c[2], c[3] the same
// in row g + 8.
__device__ inline void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(CUSIM)
  const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  for (int kp = 0; kp < 8; ++kp) {  // k = 2 kp, 2 kp + 1: lanes with t = kp % 4 hold them, in register kp / 4
    const int hi = kp / 4, src = kp % 4;
    const uint32_t top = __shfl_sync(kFull, a[2 * hi], 4 * g + src);         // row g
    const uint32_t bottom = __shfl_sync(kFull, a[2 * hi + 1], 4 * g + src);  // row g + 8
    const uint32_t b = hi ? b1 : b0;
    const uint32_t n0 = __shfl_sync(kFull, b, 4 * (2 * t) + src);  // column 2t
    const uint32_t n1 = __shfl_sync(kFull, b, 4 * (2 * t + 1) + src);
    c[0] += low_bf16(top) * low_bf16(n0) + high_bf16(top) * high_bf16(n0);
    c[1] += low_bf16(top) * low_bf16(n1) + high_bf16(top) * high_bf16(n1);
    c[2] += low_bf16(bottom) * low_bf16(n0) + high_bf16(bottom) * high_bf16(n0);
    c[3] += low_bf16(bottom) * low_bf16(n1) + high_bf16(bottom) * high_bf16(n1);
  }
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// ---- the kernel ------------------------------------------------------------------------------------------

template <int D, int WARPS, int ROW_TILES, int KEYS>
struct Flash {
  static constexpr int threads = 32 * WARPS;
  static constexpr int rows = 16 * ROW_TILES * WARPS;  // query rows per block
  static constexpr int ld = D + 8;                      // shared row stride (bf16): 16 bytes of padding
  static constexpr std::size_t q_elems = static_cast<std::size_t>(rows) * ld;
  static constexpr std::size_t kv_elems = static_cast<std::size_t>(KEYS) * ld;
  // Q (later each warp's staging of O); K and V of stage 0, then of stage 1.
  static constexpr std::size_t bytes = sizeof(bf16) * (q_elems + 4 * kv_elems);
};

// Rows [row0, row0 + ROWS) of an n x D matrix into shared memory (row stride LD), 16 bytes per
// asynchronous copy; rows past n are zero-filled without reading them.
template <int D, int LD, int ROWS, int THREADS>
__device__ inline void copy_rows_async(bf16* dst, const bf16* __restrict__ src, int row0, int n) {
  constexpr int per_row = D / 8;
  static_assert(ROWS * per_row % THREADS == 0, "whole 16-byte pieces per thread");
#pragma unroll
  for (int u = 0; u < ROWS * per_row / THREADS; ++u) {
    const int e = static_cast<int>(threadIdx.x) + u * THREADS, r = e / per_row, c = (e % per_row) * 8;
    const bool inside = row0 + r < n;
    const bf16* from = src + (inside ? static_cast<std::size_t>(row0 + r) * D + c : 0);
    __pipeline_memcpy_async(dst + r * LD + c, from, 16, inside ? 0 : 16);
  }
}

template <int D, int WARPS, int ROW_TILES, int KEYS>
__global__ void __launch_bounds__(32 * WARPS)
    flash_mma_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                     bf16* __restrict__ o, float* __restrict__ lse, AttentionShape s) {
  using F = Flash<D, WARPS, ROW_TILES, KEYS>;
  constexpr int kLd = F::ld, kMt = ROW_TILES, kNk = KEYS / 8, kNd = D / 8;
  constexpr bool kQInRegisters = ROW_TILES == 1;
  extern __shared__ __align__(16) unsigned char smem_flash[];
  bf16* qs = reinterpret_cast<bf16*>(smem_flash);
  bf16* kv = qs + F::q_elems;  // stage b: K at kv + 2 b kv_elems, V after it

  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y, q0 = blockIdx.x * F::rows, w0 = q0 + warp * 16 * kMt;
  const bf16* qh = q + static_cast<std::size_t>(bh) * s.tq * D;
  const bf16* kh = k + static_cast<std::size_t>(bh) * s.tk * D;
  const bf16* vh = v + static_cast<std::size_t>(bh) * s.tk * D;
  bf16* wq = qs + warp * 16 * kMt * kLd;  // the warp's rows of Q, later its staging of O
  const float scale_log2 = kLog2e / sqrtf(static_cast<float>(D));
  const int offset = s.tk - s.tq;
  const int end = key_end(q0 + F::rows, s.tq, s.tk, s.causal), tiles = (end + KEYS - 1) / KEYS;

  copy_rows_async<D, kLd, F::rows, F::threads>(qs, qh, q0, s.tq);
  if (tiles > 0) {
    copy_rows_async<D, kLd, KEYS, F::threads>(kv, kh, 0, s.tk);
    copy_rows_async<D, kLd, KEYS, F::threads>(kv + F::kv_elems, vh, 0, s.tk);
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();

  // A fragments of a 16 x 16 tile: lane l gives row l % 16, column 8 (l / 16).
  uint32_t qf[kQInRegisters ? D / 16 : 1][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], wq + (lane % 16) * kLd + kk * 16 + (lane / 16) * 8);
  }

  float acc[kMt][kNd][4];
  float m[kMt][2], l[kMt][2];  // per row (g, g + 8): running maximum (log2 domain), lane-partial sum
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int dn = 0; dn < kNd; ++dn)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][dn][e] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[mt][h] = -INFINITY;
      l[mt][h] = 0.0f;
    }
  }

  for (int tile = 0; tile < tiles; ++tile) {
    const int kv0 = tile * KEYS;
    if (tile + 1 < tiles) {  // into the stage every warp finished reading before the last barrier
      bf16* next = kv + ((tile + 1) & 1) * 2 * F::kv_elems;
      copy_rows_async<D, kLd, KEYS, F::threads>(next, kh, kv0 + KEYS, s.tk);
      copy_rows_async<D, kLd, KEYS, F::threads>(next + F::kv_elems, vh, kv0 + KEYS, s.tk);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);  // this tile's copies (all but the newest group) are done
    __syncthreads();           // ... every thread's
    const bf16* ks = kv + (tile & 1) * 2 * F::kv_elems;
    const bf16* vs = ks + F::kv_elems;

    // S = Q K^T: one ldmatrix_x4 of K gives the B fragments of 8 keys x 32 columns of d (lane l: key
    // l % 8, column 8 (l / 8)), used by every row tile of the warp.
    float sc[kMt][kNk][4];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int n = 0; n < kNk; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) sc[mt][n][e] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < D / 32; ++kc) {
      uint32_t qa[kMt][2][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if constexpr (kQInRegisters) {
#pragma unroll
            for (int e = 0; e < 4; ++e) qa[mt][h][e] = qf[2 * kc + h][e];
          } else {
            ldmatrix_x4(qa[mt][h], wq + (mt * 16 + lane % 16) * kLd + (2 * kc + h) * 16 + (lane / 16) * 8);
          }
        }
      }
#pragma unroll
      for (int n = 0; n < kNk; ++n) {
        uint32_t b[4];
        ldmatrix_x4(b, ks + (n * 8 + lane % 8) * kLd + kc * 32 + (lane / 8) * 8);
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          mma_bf16(sc[mt][n], qa[mt][0], b[0], b[1]);
          mma_bf16(sc[mt][n], qa[mt][1], b[2], b[3]);
        }
      }
    }

    // Mask keys past Tk and, causal, past each row's diagonal: only in tiles that reach them.
    if (kv0 + KEYS > s.tk || (s.causal && kv0 + KEYS - 1 > w0 + offset)) {
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int n = 0; n < kNk; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int j = kv0 + n * 8 + 2 * t + (e & 1), row = w0 + mt * 16 + g + (e / 2) * 8;
            if (j >= s.tk || (s.causal && j > row + offset)) sc[mt][n][e] = -INFINITY;
          }
    }

    // Online softmax, per row: the new maximum over the quad, alpha = exp2(m_old - m_new), P.
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < kNk; ++n) mx = fmaxf(mx, fmaxf(sc[mt][n][2 * h], sc[mt][n][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
        const float m_new = fmaxf(m[mt][h], mx * scale_log2);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row that saw only masked keys: p = 0
        const float alpha = exp2f(m[mt][h] - m_use);
        m[mt][h] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kNk; ++n) {
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            const float p = exp2f(fmaf(sc[mt][n][e], scale_log2, -m_use));
            sc[mt][n][e] = p;
            sum += p;
          }
        }
        l[mt][h] = l[mt][h] * alpha + sum;
#pragma unroll
        for (int dn = 0; dn < kNd; ++dn) {
          acc[mt][dn][2 * h] *= alpha;
          acc[mt][dn][2 * h + 1] *= alpha;
        }
      }
    }

    // O += P V: keys 16 kk .. 16 kk + 15 of P are S's groups 2 kk and 2 kk + 1, already in A's layout.
    // One ldmatrix_x4_trans of V gives the B fragments of 16 keys x 16 columns (lane l: key l % 16,
    // column 8 (l / 16)).
#pragma unroll
    for (int kk = 0; kk < KEYS / 16; ++kk) {
      uint32_t pa[kMt][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        pa[mt][0] = pack_bf16(sc[mt][2 * kk][0], sc[mt][2 * kk][1]);
        pa[mt][1] = pack_bf16(sc[mt][2 * kk][2], sc[mt][2 * kk][3]);
        pa[mt][2] = pack_bf16(sc[mt][2 * kk + 1][0], sc[mt][2 * kk + 1][1]);
        pa[mt][3] = pack_bf16(sc[mt][2 * kk + 1][2], sc[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vs + (kk * 16 + lane % 16) * kLd + dp * 16 + (lane / 16) * 8);
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          mma_bf16(acc[mt][2 * dp], pa[mt], b[0], b[1]);
          mma_bf16(acc[mt][2 * dp + 1], pa[mt], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }

  // L and 1 / l per row; O / l staged in the warp's own rows of Q (no other warp reads them), then
  // written 16 bytes per lane along the rows.
  float inv[kMt][2];
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(kFull, sum, 1);
      sum += __shfl_xor_sync(kFull, sum, 2);
      inv[mt][h] = sum > 0.0f ? 1.0f / sum : 0.0f;
      const int i = w0 + mt * 16 + g + 8 * h;
      if (t == 0 && i < s.tq) {
        lse[static_cast<std::size_t>(bh) * s.tq + i] =
            m[mt][h] == -INFINITY ? -INFINITY : (m[mt][h] + log2f(sum)) * kLn2;
      }
    }
  }
  __syncwarp();  // every lane's reads of the warp's Q rows are done
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int dn = 0; dn < kNd; ++dn)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<uint32_t*>(wq + (mt * 16 + g + 8 * h) * kLd + dn * 8 + 2 * t) =
            pack_bf16(acc[mt][dn][2 * h] * inv[mt][h], acc[mt][dn][2 * h + 1] * inv[mt][h]);
      }
  __syncwarp();
  constexpr int per_row = D / 8;
#pragma unroll
  for (int e = lane; e < 16 * kMt * per_row; e += 32) {
    const int r = e / per_row, c = (e % per_row) * 8, i = w0 + r;
    if (i < s.tq)
      *reinterpret_cast<uint4*>(o + (static_cast<std::size_t>(bh) * s.tq + i) * D + c) =
          *reinterpret_cast<const uint4*>(wq + r * kLd + c);
  }
}

template <int D, int WARPS, int ROW_TILES, int KEYS>
cudaError_t launch(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, AttentionShape s) {
  using F = Flash<D, WARPS, ROW_TILES, KEYS>;
  const auto kernel = flash_mma_kernel<D, WARPS, ROW_TILES, KEYS>;
  if (cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(F::bytes));
      e != cudaSuccess)
    return e;
  kernel<<<dim3((s.tq + F::rows - 1) / F::rows, s.batch * s.heads), F::threads, F::bytes>>>(q, k, v, o, lse, s);
  return cudaGetLastError();
}

template <int WARPS, int ROW_TILES, int KEYS>
cudaError_t launch_d(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, AttentionShape s) {
  switch (s.d) {
    case 32: return launch<32, WARPS, ROW_TILES, KEYS>(q, k, v, o, lse, s);
    case 64: return launch<64, WARPS, ROW_TILES, KEYS>(q, k, v, o, lse, s);
    default: return launch<128, WARPS, ROW_TILES, KEYS>(q, k, v, o, lse, s);
  }
}

}  // namespace

cudaError_t attention_forward_mma(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, AttentionShape s,
                                  FlashConfig c) {
  if (!valid(s)) return cudaErrorInvalidValue;
  if (c.warps == 4 && c.row_tiles == 1 && c.keys == 64) return launch_d<4, 1, 64>(q, k, v, o, lse, s);
  if (c.warps == 8 && c.row_tiles == 1 && c.keys == 64) return launch_d<8, 1, 64>(q, k, v, o, lse, s);
  if (c.warps == 4 && c.row_tiles == 2 && c.keys == 64) return launch_d<4, 2, 64>(q, k, v, o, lse, s);
  if (c.warps == 4 && c.row_tiles == 2 && c.keys == 32) return launch_d<4, 2, 32>(q, k, v, o, lse, s);
  return cudaErrorInvalidValue;
}

}  // namespace candidates
