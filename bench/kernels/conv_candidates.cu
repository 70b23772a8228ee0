// Candidate kernels for lab 07's conv2d_backward_data and conv2d_backward_filter (see
// conv_candidates.h).
//
// dgrad. The reference (solutions/07-convolution/convolution.cu) reduces over kk = (k, r, s) in that
// order, kBwdBK = 8 taps a step: the 8 taps of a step have up to 8 different shifts (r, s), so each
// A element it gathers from dy needs its own source position and bounds test, and each thread
// steps its taps with a loop of compares. Here the reduction runs over (k chunk, r, s, k in chunk):
// a step is BK filters at one (r, s). Per step and pixel there is one position and one test, and
// the BK elements of that pixel are BK loads at a fixed stride (P Q) from it. Within a chunk the
// R S steps read overlapping windows of the same dy rows, which L1 keeps.
//
// The B operand of a chunk, w[k0 .. k0 + BK][c0 .. c0 + BN][r][s], is BK runs of BN R S contiguous
// floats (KCRS), read as float4s: each of the chunk's R S steps loads 1/(R S) of the next chunk's
// B into registers while this step is multiplied, and stores it transposed, Bs[tap][k][c], into the
// second of two chunk buffers. As (one step's dy tile) is double-buffered per step, as in the
// reference. Integer-valued data give sums exact in float in any order: the validation in
// bench_kernels.cpp compares every candidate bit for bit.
#include "conv_candidates.h"

#include <algorithm>
#include <cstddef>

namespace candidates {
namespace {

constexpr int kTaps = 9;  // R * S of the filters these candidates handle

__host__ __device__ int ceil_div(int a, int b) { return (a + b - 1) / b; }

struct Shape {
  int N, C, H, W, K, R, S, P, Q;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
};

// One step of the register-blocked tile product, as the reference's multiply_blocked: thread
// (tm, tn) owns rows g * 4 (BM / TM) + tm * 4 + e of the tile (g < TM / 4, e < 4), likewise
// columns, so a warp reads consecutive float4s of a tile row.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void multiply_step(const float* As, const float* Bs, int tm, int tn,
                                              float (&acc)[TM][TN]) {
#pragma unroll
  for (int d = 0; d < BK; ++d) {
    float a[TM], b[TN];
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(As + d * (BM + 4) + g * 4 * (BM / TM) + tm * 4);
      a[g * 4] = v.x, a[g * 4 + 1] = v.y, a[g * 4 + 2] = v.z, a[g * 4 + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(Bs + d * (BN + 4) + g * 4 * (BN / TN) + tn * 4);
      b[g * 4] = v.x, b[g * 4 + 1] = v.y, b[g * 4 + 2] = v.z, b[g * 4 + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
  }
}

template <int kTile, int kPerThread>
__device__ __forceinline__ int blocked_index(int t, int i) {
  return i / 4 * 4 * (kTile / kPerThread) + t * 4 + i % 4;
}

// Shared memory of one block: As[2][BK][BM + 4], then Bs[2][kTaps][BK][BN + 4] with 4 floats
// after each tap's [BK][BN + 4] (kBTap floats apart), so that a warp's transposing stores, which
// spread over the taps of a few channels, fall in different banks.
template <int BM, int BN, int BK>
struct DgradSmem {
  static constexpr int kA = BK * (BM + 4);       // one A buffer
  static constexpr int kBTap = BK * (BN + 4) + 4;  // one tap of a B buffer
  static constexpr int kB = kTaps * kBTap;        // one B buffer
  static constexpr std::size_t kBytes = (2 * kA + 2 * kB) * sizeof(float);
};

template <int BM, int BN, int BK, int TM, int TN, int kMinBlocks>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), kMinBlocks)
    dgrad_taps_inner_kernel(Shape s, const float* __restrict__ dy, const float* __restrict__ w,
                            float* __restrict__ dx) {
  using Smem = DgradSmem<BM, BN, BK>;
  constexpr int kThreads = (BM / TM) * (BN / TN), kWarps = kThreads / 32;
  constexpr int kARows = BK / kWarps, kAPixels = BM / 32;  // per thread: filters x pixels of the A tile
  constexpr int kBRow = BN * kTaps / 4;                    // float4s of one filter's run in a chunk
  constexpr int kPiece = BK * BN / 4;                      // float4s of a chunk's B loaded per step
  constexpr int kBPerStep = (kPiece + kThreads - 1) / kThreads;  // of them, per thread
  static_assert(BK % kWarps == 0 && BM % 32 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "tile shape");
  extern __shared__ __align__(16) float smem[];
  float* const As = smem;               // [2][BK][BM + 4]: As[k][m] = dy gathered at this step's (r, s)
  float* const Bs = smem + 2 * Smem::kA;  // [2][kTaps] x [BK][BN + 4]: Bs[tap][k][c] = w[k][c][tap]
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int hw_count = s.H * s.W, pq_count = s.P * s.Q;
  const int M = s.N * hw_count;
  const int m0 = blockIdx.x * BM, c0 = blockIdx.y * BN;
  const bool unit_stride = s.stride_h == 1 && s.stride_w == 1;
  const bool vec_w = s.C % 4 == 0;  // a filter's run starts at (k C + c0) R S: a multiple of 4
  const int b_limit = (s.C - c0) * kTaps;  // elements of a filter's run that exist (channels < C)

  // A: pixels m0 + lane + 32 i as (h + pad_h, w + pad_w) and the offset of dy[n][0][0][0]; filters
  // k0 + warp + kWarps ii.
  int a_image[kAPixels], a_h[kAPixels], a_w[kAPixels];
#pragma unroll
  for (int i = 0; i < kAPixels; ++i) {
    const int m = m0 + lane + 32 * i;
    const int hw = m % hw_count;
    a_image[i] = m < M ? m / hw_count * s.K * pq_count : 0;
    a_h[i] = m < M ? hw / s.W + s.pad_h : -(1 << 28);  // past M: every tap misses, zeros
    a_w[i] = hw % s.W + s.pad_w;
  }

  float a_next[kARows][kAPixels];
  float4 b_next[kBPerStep];
  auto fetch_a = [&](int k0, int r, int t) {
    const int dh = r * s.dil_h, dw = t * s.dil_w;
#pragma unroll
    for (int i = 0; i < kAPixels; ++i) {
      const int ph = a_h[i] - dh, pw = a_w[i] - dw;  // p stride_h, q stride_w
      int offset = -1;
      if (unit_stride) {
        if (static_cast<unsigned>(ph) < static_cast<unsigned>(s.P) &&
            static_cast<unsigned>(pw) < static_cast<unsigned>(s.Q)) {
          offset = a_image[i] + ph * s.Q + pw;
        }
      } else if (ph >= 0 && pw >= 0 && ph % s.stride_h == 0 && pw % s.stride_w == 0) {
        const int p = ph / s.stride_h, q = pw / s.stride_w;
        if (p < s.P && q < s.Q) offset = a_image[i] + p * s.Q + q;
      }
#pragma unroll
      for (int ii = 0; ii < kARows; ++ii) {
        const int k = k0 + warp + kWarps * ii;
        a_next[ii][i] = (offset >= 0 && k < s.K) ? dy[offset + k * pq_count] : 0.0f;
      }
    }
  };
  auto stash_a = [&](int buffer) {
#pragma unroll
    for (int ii = 0; ii < kARows; ++ii) {
#pragma unroll
      for (int i = 0; i < kAPixels; ++i) {
        As[buffer * Smem::kA + (warp + kWarps * ii) * (BM + 4) + lane + 32 * i] = a_next[ii][i];
      }
    }
  };
  // Piece `piece` (< kTaps) of chunk k0's B: float4 f = piece kPiece + tid + kThreads j of the
  // chunk, element e of filter k0 + f / kBRow's run, i.e. channel c0 + e / kTaps, tap e % kTaps.
  auto fetch_b = [&](int k0, int piece) {
#pragma unroll
    for (int j = 0; j < kBPerStep; ++j) {
      const int f = piece * kPiece + tid + kThreads * j;
      const int k = k0 + f / kBRow, e = f % kBRow * 4;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (tid + kThreads * j < kPiece && k < s.K) {
        const float* run = w + (static_cast<std::size_t>(k) * s.C + c0) * kTaps;
        if (vec_w) {  // b_limit is a multiple of 4: the float4 is wholly in or wholly out
          if (e < b_limit) v = *reinterpret_cast<const float4*>(run + e);
        } else {
          v = make_float4(e < b_limit ? run[e] : 0.0f, e + 1 < b_limit ? run[e + 1] : 0.0f,
                          e + 2 < b_limit ? run[e + 2] : 0.0f, e + 3 < b_limit ? run[e + 3] : 0.0f);
        }
      }
      b_next[j] = v;
    }
  };
  auto stash_b = [&](int buffer, int piece) {
#pragma unroll
    for (int j = 0; j < kBPerStep; ++j) {
      if (tid + kThreads * j >= kPiece) break;
      const int f = piece * kPiece + tid + kThreads * j;
      const int kl = f / kBRow, e = f % kBRow * 4;
      const float v[4] = {b_next[j].x, b_next[j].y, b_next[j].z, b_next[j].w};
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int c = (e + x) / kTaps, tap = (e + x) % kTaps;
        Bs[buffer * Smem::kB + tap * Smem::kBTap + kl * (BN + 4) + c] = v[x];
      }
    }
  };

  const int tm = tid % (BM / TM), tn = tid / (BM / TM);
  float acc[TM][TN] = {};
  for (int piece = 0; piece < kTaps; ++piece) {
    fetch_b(0, piece);
    stash_b(0, piece);
  }
  fetch_a(0, 0, 0);
  stash_a(0);
  __syncthreads();

  const int steps = ceil_div(s.K, BK) * kTaps;
  int a_buffer = 0, b_buffer = 0;
  int k0 = 0, r = 0, t = 0;  // this step: filters k0 .. k0 + BK at tap (r, t)
  for (int step = 0; step < steps; ++step) {
    const int tap = r * s.S + t;
    int next_k0 = k0, next_r = r, next_t = t + 1;
    if (next_t == s.S) {
      next_t = 0;
      if (++next_r == s.R) next_r = 0, next_k0 += BK;
    }
    const bool more = step + 1 < steps;
    const bool next_chunk = k0 + BK < s.K;  // this chunk's steps load the next chunk's B
    if (more) fetch_a(next_k0, next_r, next_t);  // global loads in flight while this step is multiplied
    if (next_chunk) fetch_b(k0 + BK, tap);
    multiply_step<BM, BN, BK, TM, TN>(As + a_buffer * Smem::kA, Bs + b_buffer * Smem::kB + tap * Smem::kBTap, tm,
                                      tn, acc);
    // The other B buffer's last readers (the previous chunk's last step) passed a barrier since.
    if (next_chunk) stash_b(b_buffer ^ 1, tap);
    if (more) {
      stash_a(a_buffer ^ 1);
      __syncthreads();
      a_buffer ^= 1;
    }
    if (next_k0 != k0) b_buffer ^= 1;
    k0 = next_k0, r = next_r, t = next_t;
  }

  // dx[n][c][h][w], as the reference stores it: float4s of 4 consecutive pixels when H W % 4 == 0.
  const bool vec_out = hw_count % 4 == 0;
#pragma unroll
  for (int i = 0; i < TM; i += 4) {
    const int m = m0 + blocked_index<BM, TM>(tm, i);
    if (m >= M) continue;
    if (vec_out) {
      float* out = dx + static_cast<std::size_t>(m / hw_count) * s.C * hw_count + m % hw_count;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int c = c0 + blocked_index<BN, TN>(tn, j);
        if (c < s.C) {
          *reinterpret_cast<float4*>(out + static_cast<std::size_t>(c) * hw_count) =
              make_float4(acc[i][j], acc[i + 1][j], acc[i + 2][j], acc[i + 3][j]);
        }
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (m + e >= M) break;
        float* out = dx + static_cast<std::size_t>((m + e) / hw_count) * s.C * hw_count + (m + e) % hw_count;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int c = c0 + blocked_index<BN, TN>(tn, j);
          if (c < s.C) out[static_cast<std::size_t>(c) * hw_count] = acc[i + e][j];
        }
      }
    }
  }
}

template <int BM, int BN, int BK, int TM, int TN, int kMinBlocks>
cudaError_t launch(const Shape& s, const float* dy, const float* w, float* dx) {
  constexpr std::size_t kBytes = DgradSmem<BM, BN, BK>::kBytes;
  auto* kernel = dgrad_taps_inner_kernel<BM, BN, BK, TM, TN, kMinBlocks>;
  static const cudaError_t allowed =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes));
  if (allowed != cudaSuccess) return allowed;
  const dim3 grid(ceil_div(s.N * s.H * s.W, BM), ceil_div(s.C, BN));
  kernel<<<grid, (BM / TM) * (BN / TN), kBytes>>>(s, dy, w, dx);
  return cudaGetLastError();
}

bool valid(const ConvParams& c) {
  return c.N >= 1 && c.C >= 1 && c.H >= 1 && c.W >= 1 && c.K >= 1 && c.R >= 1 && c.S >= 1 && c.pad_h >= 0 &&
         c.pad_w >= 0 && c.stride_h >= 1 && c.stride_w >= 1 && c.dilation_h >= 1 && c.dilation_w >= 1 &&
         conv_out_h(c) >= 1 && conv_out_w(c) >= 1;
}

// ---- wgrad ------------------------------------------------------------------------------------------
//
// dw[k][kk] with kk = (c, r, s): GEMM rows k, columns kk, reduction over the N P Q pixels j, split
// across blockIdx.z into slices of the workspace added in order afterwards, as the reference. What
// differs: BK pixels a step (16: half the steps and barriers, twice the loads in flight), loaded as
// BK / 8 groups of 8 lanes on 8 consecutive pixels (the reference's conflict-free transposing
// stores, 64 contiguous bytes a row), and the number of splits chosen for whole waves: the most
// that w waves hold, for the fewest w whose blocks fill at least 95% of them (on the block slots
// the compiled kernel's occupancy gives, not an assumed one), else the fullest. At N = 32 on 132
// SMs with 3 blocks of 128 x 64 an SM, conv4_x's 72 tiles take 11 splits (792 blocks, 2 whole
// waves) where the reference takes 5 (360 blocks for 396 slots).

template <int BM, int BN, int BK, int TM, int TN, int kMinBlocks>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), kMinBlocks)
    wgrad_split_kernel(Shape s, const float* __restrict__ x, const float* __restrict__ dy,
                       float* __restrict__ partial, int j_per_split) {
  constexpr int kThreads = (BM / TM) * (BN / TN), kStride = kThreads / 8, kGroups = BK / 8;
  constexpr int kALoads = BM / kStride, kBLoads = BN / kStride;
  static_assert(kThreads % 8 == 0 && BK % 8 == 0 && BM % kStride == 0 && BN % kStride == 0 && TM % 4 == 0 &&
                    TN % 4 == 0,
                "tile shape");
  __shared__ __align__(16) float As[2][BK][BM + 4];  // As[j][k]: dy, transposed
  __shared__ __align__(16) float Bs[2][BK][BN + 4];  // Bs[j][kk]: x gathered, transposed
  const int tid = threadIdx.x;
  const int hw_count = s.H * s.W, pq_count = s.P * s.Q, rs_count = s.R * s.S, crs_count = s.C * rs_count;
  const int J = s.N * pq_count;
  const int k0 = blockIdx.y * BM, kk0 = blockIdx.x * BN;
  const int j_begin = blockIdx.z * j_per_split, j_end = min(J, j_begin + j_per_split);

  // Loads: pixels j0 + 8 g + tid % 8 (g < kGroups), rows (filters of A, taps of B) tid / 8 + kStride i.
  const int l_j = tid % 8, l_row = tid / 8;
  int b_offset[kBLoads], b_dh[kBLoads], b_dw[kBLoads];  // c H W (-1 past C R S), r dil_h - pad_h, s dil_w - pad_w
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int kk = kk0 + l_row + kStride * i;
    b_offset[i] = kk < crs_count ? kk / rs_count * hw_count : -1;
    b_dh[i] = kk % rs_count / s.S * s.dil_h - s.pad_h;
    b_dw[i] = kk % s.S * s.dil_w - s.pad_w;
  }
  int j[kGroups], n[kGroups], p[kGroups], q[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    j[g] = j_begin + 8 * g + l_j;
    n[g] = j[g] / pq_count, p[g] = j[g] % pq_count / s.Q, q[g] = j[g] % s.Q;
  }

  float a_next[kGroups][kALoads], b_next[kGroups][kBLoads];
  auto fetch = [&] {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      const bool in = j[g] < j_end;
      const std::size_t image = in ? static_cast<std::size_t>(n[g]) : 0;
      const float* grad = dy + image * s.K * pq_count + p[g] * s.Q + q[g];
      const float* plane = x + image * s.C * hw_count;
      const int h0 = p[g] * s.stride_h, w0 = q[g] * s.stride_w;
#pragma unroll
      for (int i = 0; i < kALoads; ++i) {
        const int k = k0 + l_row + kStride * i;
        a_next[g][i] = (in && k < s.K) ? grad[static_cast<std::size_t>(k) * pq_count] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kBLoads; ++i) {
        const int h = h0 + b_dh[i], ww = w0 + b_dw[i];
        b_next[g][i] = (in && b_offset[i] >= 0 && h >= 0 && h < s.H && ww >= 0 && ww < s.W)
                           ? plane[b_offset[i] + h * s.W + ww]
                           : 0.0f;
      }
    }
  };
  auto stash = [&](int buffer) {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
#pragma unroll
      for (int i = 0; i < kALoads; ++i) As[buffer][8 * g + l_j][l_row + kStride * i] = a_next[g][i];
#pragma unroll
      for (int i = 0; i < kBLoads; ++i) Bs[buffer][8 * g + l_j][l_row + kStride * i] = b_next[g][i];
    }
  };
  auto step_pixels = [&] {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      j[g] += BK;
      for (q[g] += BK; q[g] >= s.Q; q[g] -= s.Q) {
        if (++p[g] == s.P) p[g] = 0, ++n[g];
      }
    }
  };

  // Lanes along kk: the float4 stores of one filter by a warp's first BN / TN lanes are contiguous.
  const int tn = tid % (BN / TN), tm = tid / (BN / TN);
  float acc[TM][TN] = {};
  fetch();
  stash(0);
  __syncthreads();
  int buffer = 0;
  for (int jt = j_begin; jt < j_end; jt += BK) {
    const bool more = jt + BK < j_end;
    if (more) {
      step_pixels();
      fetch();  // global loads in flight while this tile is multiplied
    }
    multiply_step<BM, BN, BK, TM, TN>(&As[buffer][0][0], &Bs[buffer][0][0], tm, tn, acc);
    if (more) {
      stash(buffer ^ 1);
      __syncthreads();
      buffer ^= 1;
    }
  }

  // This split's slice: every element of the block's tile is written.
  float* slice = partial + static_cast<std::size_t>(blockIdx.z) * s.K * crs_count;
  const bool vec_out = crs_count % 4 == 0;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int k = k0 + blocked_index<BM, TM>(tm, i);
    if (k >= s.K) continue;
    float* row = slice + static_cast<std::size_t>(k) * crs_count;
#pragma unroll
    for (int jj = 0; jj < TN; jj += 4) {
      const int kk = kk0 + blocked_index<BN, TN>(tn, jj);
      if (vec_out && kk < crs_count) {
        *reinterpret_cast<float4*>(row + kk) = make_float4(acc[i][jj], acc[i][jj + 1], acc[i][jj + 2], acc[i][jj + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (kk + e < crs_count) row[kk + e] = acc[i][jj + e];
        }
      }
    }
  }
}

// dw[i] = the sum of the slices' element i in order z = 0, 1, ... (the same bits on every run).
__global__ void sum_slices_in_order(const float* __restrict__ partial, int splits, std::size_t count,
                                    float* __restrict__ dw) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float sum = 0.0f;
#pragma unroll 8
  for (int z = 0; z < splits; ++z) sum += partial[static_cast<std::size_t>(z) * count + i];
  dw[i] = sum;
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || value <= 0) {
      (void)cudaGetLastError();
      return 1;
    }
    return value;
  }();
  return count;
}

template <int BM, int BN, int BK, int TM, int TN, int kMinBlocks>
cudaError_t launch_wgrad(const Shape& s, const float* x, const float* dy, float* dw, float* workspace) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  auto* kernel = wgrad_split_kernel<BM, BN, BK, TM, TN, kMinBlocks>;
  static const int resident = [&] {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, 0) != cudaSuccess || blocks <= 0) {
      (void)cudaGetLastError();
      return kMinBlocks;
    }
    return blocks;
  }();
  const int crs_count = s.C * s.R * s.S, J = s.N * s.P * s.Q;
  const dim3 tiles(ceil_div(crs_count, BN), ceil_div(s.K, BM));
  const long long slots = static_cast<long long>(multiprocessors()) * resident, tile_count = tiles.x * tiles.y;
  const int max_splits = std::min(kWgradSplits, std::max(1, J / 256));  // each split at least 256 pixels
  // For 1, 2, ... waves: the most splits that many waves hold; stop at the first that fills 95%.
  int splits = 1;
  double best = 0.0;
  for (long long waves = 1;; ++waves) {
    const long long z = std::min<long long>(max_splits, waves * slots / tile_count);
    if (z >= 1) {
      const long long blocks = tile_count * z;
      const double fill = static_cast<double>(blocks) / static_cast<double>((blocks + slots - 1) / slots * slots);
      if (fill > best) best = fill, splits = static_cast<int>(z);
      if (fill >= 0.95) break;
    }
    if (z == max_splits) break;
  }
  const int j_per_split = ceil_div(ceil_div(J, splits), BK) * BK;
  const int used = ceil_div(J, j_per_split);
  kernel<<<dim3(tiles.x, tiles.y, used), kThreads>>>(s, x, dy, workspace, j_per_split);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const std::size_t count = static_cast<std::size_t>(s.K) * crs_count;
  sum_slices_in_order<<<static_cast<unsigned>((count + 255) / 256), 256>>>(workspace, used, count, dw);
  return cudaGetLastError();
}

}  // namespace

cudaError_t dgrad_taps_inner(ConvParams p, const float* dy, const float* w, float* dx, DgradTile tile) {
  if (!valid(p) || p.R * p.S != kTaps) return cudaErrorInvalidValue;
  const Shape s{p.N, p.C, p.H, p.W, p.K, p.R, p.S, conv_out_h(p), conv_out_w(p),
                p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w};
  // Shared memory a block: 43 KB, 47 KB, 79 KB, 85 KB (the last two: at most 2 blocks an SM).
  switch (tile) {
    case DgradTile::k64x64_8x4_bk8: return launch<64, 64, 8, 8, 4, 4>(s, dy, w, dx);
    case DgradTile::k128x64_8x4_bk8: return launch<128, 64, 8, 8, 4, 2>(s, dy, w, dx);
    case DgradTile::k64x128_8x8_bk8: return launch<64, 128, 8, 8, 8, 2>(s, dy, w, dx);
    case DgradTile::k64x64_8x4_bk16: return launch<64, 64, 16, 8, 4, 2>(s, dy, w, dx);
  }
  return cudaErrorInvalidValue;
}

cudaError_t wgrad_split(ConvParams p, const float* x, const float* dy, float* dw, float* workspace, WgradTile tile) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s{p.N, p.C, p.H, p.W, p.K, p.R, p.S, conv_out_h(p), conv_out_w(p),
                p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w};
  switch (tile) {
    case WgradTile::k128x64_8x8_bk16: return launch_wgrad<128, 64, 16, 8, 8, 2>(s, x, dy, dw, workspace);
    case WgradTile::k64x64_8x4_bk16: return launch_wgrad<64, 64, 16, 8, 4, 3>(s, x, dy, dw, workspace);
  }
  return cudaErrorInvalidValue;
}

}  // namespace candidates
