// Warp matrix functions (<mma.h>, nvcuda::wmma): every shape and element type cusim provides,
// both layouts of A and B, accumulators loaded and stored in either memory order, elementwise work
// on fragments, several warps per block, and the faults (a misaligned tile; sim only: a warp that
// does not call together, lanes that pass different pointers, a warp of fewer than 32 threads).
//
// Inputs are multiples of 1/8 between -1 and 1, so every product and every sum of a tile is exact
// in every accumulator type: the GPU and cusim must both give the host's result bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;
namespace wmma = nvcuda::wmma;

namespace {

template <class T>
struct storage {
    using type = T;
};
template <>
struct storage<wmma::precision::tf32> {
    using type = float;
};

template <class S>
S from_double(double v) {
    if constexpr (std::is_same_v<S, __half>) return __float2half(static_cast<float>(v));
    else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __float2bfloat16(static_cast<float>(v));
    else return static_cast<S>(v);
}
template <class S>
double to_double(S v) {
    if constexpr (std::is_same_v<S, __half>) return __half2float(v);
    else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(v);
    else return static_cast<double>(v);
}

// D = A * B + C for one tile. lda/ldb/ldc/ldd are in elements; the layouts of A and B are the
// fragments' own; C is loaded and D stored in the memory orders given.
template <int M, int N, int K, class T, class LA, class LB, class TC, class TD>
__global__ void mma_tile(const typename storage<T>::type* a, unsigned lda, const typename storage<T>::type* b,
                         unsigned ldb, const TC* c, unsigned ldc, wmma::layout_t lc, TD* d, unsigned ldd,
                         wmma::layout_t ld, float scale_d) {
    wmma::fragment<wmma::matrix_a, M, N, K, T, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, T, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, TC> fc;
    wmma::fragment<wmma::accumulator, M, N, K, TD> fd;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(fc, c, ldc, lc);
    wmma::mma_sync(fd, fa, fb, fc);
    for (int i = 0; i < fd.num_elements; ++i) fd.x[i] = static_cast<TD>(static_cast<float>(fd.x[i]) * scale_d);
    wmma::store_matrix_sync(d, fd, ldd, ld);
}

struct Layouts {
    bool a_col, b_col;
    wmma::layout_t c, d;
};

// Runs mma_tile on exact random tiles and compares with the host product. Leading dimensions are
// padded by 16 bytes, as shared-memory tiles are.
template <int M, int N, int K, class T, class LA, class LB, class TC, class TD>
void run_tile(wmma::layout_t lc, wmma::layout_t ld, float scale = 1.0f) {
    using S = typename storage<T>::type;
    constexpr bool a_col = std::is_same_v<LA, wmma::col_major>, b_col = std::is_same_v<LB, wmma::col_major>;
    const unsigned pad_s = 16 / sizeof(S), pad_c = 16 / sizeof(TC), pad_d = 16 / sizeof(TD);
    const unsigned lda = (a_col ? M : K) + pad_s, ldb = (b_col ? K : N) + pad_s;
    const unsigned ldc = (lc == wmma::mem_col_major ? M : N) + pad_c, ldd = (ld == wmma::mem_col_major ? M : N) + pad_d;
    const size_t na = size_t(lda) * (a_col ? K : M), nb = size_t(ldb) * (b_col ? N : K);
    const size_t nc = size_t(ldc) * (lc == wmma::mem_col_major ? N : M), nd = size_t(ldd) * (ld == wmma::mem_col_major ? N : M);
    std::vector<double> A(M * K), B(K * N), C(M * N);
    uint32_t seed = 12345u + M * 7 + N * 3 + K;
    auto next = [&seed](int lo, int hi) {
        seed = seed * 1664525u + 1013904223u;
        return lo + static_cast<int>((seed >> 8) % static_cast<uint32_t>(hi - lo + 1));
    };
    const bool unsigned_in = std::is_same_v<S, unsigned char>, int_in = std::is_integral_v<S>;
    for (auto& v : A) v = int_in ? next(unsigned_in ? 0 : -8, 8) : next(-8, 8) / 8.0;
    for (auto& v : B) v = int_in ? next(unsigned_in ? 0 : -8, 8) : next(-8, 8) / 8.0;
    for (auto& v : C) v = std::is_integral_v<TC> ? next(-100, 100) : next(-16, 16) / 4.0;
    std::vector<S> ha(na, from_double<S>(0)), hb(nb, from_double<S>(0));
    std::vector<TC> hc(nc, from_double<TC>(0));
    for (int r = 0; r < M; ++r)
        for (int k = 0; k < K; ++k) ha[a_col ? k * lda + r : r * lda + k] = from_double<S>(A[r * K + k]);
    for (int k = 0; k < K; ++k)
        for (int c = 0; c < N; ++c) hb[b_col ? c * ldb + k : k * ldb + c] = from_double<S>(B[k * N + c]);
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) hc[lc == wmma::mem_col_major ? c * ldc + r : r * ldc + c] = from_double<TC>(C[r * N + c]);
    DeviceBuffer<S> da(na), db(nb);
    DeviceBuffer<TC> dc(nc);
    DeviceBuffer<TD> dd(nd);
    ASSERT_CUDA_OK(da.upload(ha));
    ASSERT_CUDA_OK(db.upload(hb));
    ASSERT_CUDA_OK(dc.upload(hc));
    ASSERT_CUDA_OK(cudaMemset(dd.get(), 0, nd * sizeof(TD)));
    mma_tile<M, N, K, T, LA, LB, TC, TD><<<1, 32>>>(da.get(), lda, db.get(), ldb, dc.get(), ldc, lc, dd.get(), ldd, ld,
                                                    scale);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    cudaError_t err = cudaSuccess;
    std::vector<TD> hd = dd.download(&err);
    ASSERT_CUDA_OK(err);
    int wrong = 0;
    for (int i = 0; i < M && wrong < 5; ++i)
        for (int j = 0; j < N && wrong < 5; ++j) {
            double want = C[i * N + j];
            for (int k = 0; k < K; ++k) want += A[i * K + k] * B[k * N + j];
            want *= scale;
            const double got = to_double(hd[ld == wmma::mem_col_major ? j * ldd + i : i * ldd + j]);
            if (got != want) {
                ADD_FAILURE() << "D(" << i << "," << j << ") = " << got << ", expected " << want;
                ++wrong;
            }
        }
}

}  // namespace

using RM = wmma::row_major;
using CM = wmma::col_major;
constexpr auto kRow = wmma::mem_row_major;
constexpr auto kCol = wmma::mem_col_major;

TEST(Wmma, HalfM16N16K16EveryLayoutFloatAccumulator) {
    run_tile<16, 16, 16, __half, RM, RM, float, float>(kRow, kRow);
    run_tile<16, 16, 16, __half, RM, CM, float, float>(kCol, kRow);
    run_tile<16, 16, 16, __half, CM, RM, float, float>(kRow, kCol);
    run_tile<16, 16, 16, __half, CM, CM, float, float>(kCol, kCol);
}

TEST(Wmma, HalfAccumulatorsAndMixedAccumulators) {
    run_tile<16, 16, 16, __half, RM, CM, __half, __half>(kRow, kRow);
    run_tile<16, 16, 16, __half, RM, CM, __half, float>(kCol, kRow);
    run_tile<16, 16, 16, __half, CM, RM, float, __half>(kRow, kCol);
}

TEST(Wmma, HalfRectangularShapes) {
    run_tile<32, 8, 16, __half, RM, CM, float, float>(kRow, kRow);
    run_tile<32, 8, 16, __half, CM, RM, float, float>(kCol, kCol);
    run_tile<8, 32, 16, __half, RM, RM, float, float>(kRow, kCol);
    run_tile<8, 32, 16, __half, CM, CM, __half, __half>(kCol, kRow);
}

TEST(Wmma, Bfloat16EveryShape) {
    run_tile<16, 16, 16, __nv_bfloat16, RM, CM, float, float>(kRow, kRow);
    run_tile<16, 16, 16, __nv_bfloat16, CM, RM, float, float>(kCol, kRow);
    run_tile<32, 8, 16, __nv_bfloat16, RM, RM, float, float>(kRow, kCol);
    run_tile<8, 32, 16, __nv_bfloat16, CM, CM, float, float>(kCol, kCol);
}

TEST(Wmma, Int8WithIntAccumulator) {
    run_tile<16, 16, 16, signed char, RM, CM, int, int>(kRow, kRow);
    run_tile<32, 8, 16, unsigned char, RM, CM, int, int>(kCol, kRow);
    run_tile<8, 32, 16, signed char, RM, CM, int, int>(kRow, kCol);
}

TEST(Wmma, Tf32AndDouble) {
    run_tile<16, 16, 8, wmma::precision::tf32, RM, CM, float, float>(kRow, kRow);
    run_tile<16, 16, 8, wmma::precision::tf32, CM, RM, float, float>(kCol, kCol);
    run_tile<8, 8, 4, double, RM, CM, double, double>(kRow, kRow);
    run_tile<8, 8, 4, double, CM, RM, double, double>(kCol, kCol);
}

TEST(Wmma, ElementwiseWorkOnAccumulatorFragments) {
    // Every lane scales its own elements: the mapping of elements to lanes does not matter.
    run_tile<16, 16, 16, __half, RM, CM, float, float>(kRow, kRow, 0.5f);
    run_tile<8, 32, 16, __nv_bfloat16, RM, RM, float, float>(kCol, kRow, -2.0f);
}

// A float accumulator converted elementwise into a __half accumulator, then stored.
__global__ void convert_accumulator(const __half* a, const __half* b, __half* d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fragment<wmma::accumulator, 16, 16, 16, __half> out;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    for (int i = 0; i < out.num_elements; ++i) out.x[i] = __float2half(acc.x[i]);
    wmma::store_matrix_sync(d, out, 16, wmma::mem_row_major);
}

TEST(Wmma, FloatAccumulatorConvertsElementwiseToHalfAccumulator) {
    std::vector<__half> a(256), b(256);
    std::vector<double> A(256), B(256);
    for (int i = 0; i < 256; ++i) {
        A[i] = ((i * 5) % 17 - 8) / 8.0, a[i] = __float2half(float(A[i]));
        B[i] = ((i * 7) % 15 - 7) / 8.0, b[i] = __float2half(float(B[i]));
    }
    DeviceBuffer<__half> da(256), db(256), dd(256);
    ASSERT_CUDA_OK(da.upload(a));
    ASSERT_CUDA_OK(db.upload(b));
    convert_accumulator<<<1, 32>>>(da.get(), db.get(), dd.get());
    ASSERT_CUDA_OK(launch_result().sync);
    cudaError_t err = cudaSuccess;
    auto d = dd.download(&err);
    ASSERT_CUDA_OK(err);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
            double want = 0;
            for (int k = 0; k < 16; ++k) want += A[i * 16 + k] * B[k * 16 + j];
            ASSERT_EQ(__half2float(d[i * 16 + j]), want) << "D(" << i << "," << j << ")";
        }
}

__global__ void tf32_round(const float* in, float* out, int n) {
    const int i = threadIdx.x;
    if (i < n) out[i] = wmma::__float_to_tf32(in[i]);
}

TEST(Wmma, FloatToTf32RoundsToNearestTiesAway) {
    const std::vector<float> in = {1.0f, 1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(1.0f, -12),
                                   -(1.0f + std::ldexp(1.0f, -11)), 1.0f + 3 * std::ldexp(1.0f, -11), 0.0f};
    const std::vector<float> want = {1.0f, 1.0f + std::ldexp(1.0f, -10), 1.0f, -(1.0f + std::ldexp(1.0f, -10)),
                                     1.0f + 2 * std::ldexp(1.0f, -10), 0.0f};
    const int n = static_cast<int>(in.size());
    DeviceBuffer<float> din(n), dout(n);
    ASSERT_CUDA_OK(din.upload(in));
    tf32_round<<<1, 32>>>(din.get(), dout.get(), n);
    ASSERT_CUDA_OK(launch_result().sync);
    cudaError_t err = cudaSuccess;
    auto got = dout.download(&err);
    ASSERT_CUDA_OK(err);
    for (int i = 0; i < n; ++i) EXPECT_EQ(got[i], want[i]) << "input " << in[i];
}

// Four warps of a 2-D block, each multiplying its own 16x16 tile of a 64x16 by 16x16 product;
// A and B staged through shared memory with a padded leading dimension.
__global__ void four_warps(const __half* a, const __half* b, float* d) {
    __shared__ __align__(32) __half sa[64 * 24];
    __shared__ __align__(32) __half sb[16 * 24];
    const int t = threadIdx.x + blockDim.x * threadIdx.y;
    for (int i = t; i < 64 * 16; i += blockDim.x * blockDim.y) sa[(i / 16) * 24 + i % 16] = a[i];
    for (int i = t; i < 16 * 16; i += blockDim.x * blockDim.y) sb[(i / 16) * 24 + i % 16] = b[i];
    __syncthreads();
    const int warp = t / 32;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::load_matrix_sync(fa, sa + warp * 16 * 24, 24);
    wmma::load_matrix_sync(fb, sb, 24);
    wmma::mma_sync(acc, fa, fb, acc);  // in place
    wmma::store_matrix_sync(d + warp * 16 * 16, acc, 16, wmma::mem_row_major);
}

TEST(Wmma, FourWarpsOfATwoDimensionalBlockInPlaceAccumulate) {
    std::vector<__half> a(64 * 16), b(16 * 16);
    std::vector<double> A(64 * 16), B(16 * 16);
    for (int i = 0; i < 64 * 16; ++i) A[i] = ((i * 37) % 17 - 8) / 8.0, a[i] = __float2half(float(A[i]));
    for (int i = 0; i < 16 * 16; ++i) B[i] = ((i * 11) % 13 - 6) / 8.0, b[i] = __float2half(float(B[i]));
    DeviceBuffer<__half> da(a.size()), db(b.size());
    DeviceBuffer<float> dd(64 * 16);
    ASSERT_CUDA_OK(da.upload(a));
    ASSERT_CUDA_OK(db.upload(b));
    four_warps<<<1, dim3(32, 4)>>>(da.get(), db.get(), dd.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    cudaError_t err = cudaSuccess;
    auto d = dd.download(&err);
    ASSERT_CUDA_OK(err);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 16; ++j) {
            double want = 1.0;
            for (int k = 0; k < 16; ++k) want += A[i * 16 + k] * B[k * 16 + j];
            ASSERT_EQ(d[i * 16 + j], want) << "D(" << i << "," << j << ")";
        }
}

__global__ void mma_in_small_block(float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(fa, __float2half(1.0f));
    wmma::fill_fragment(fb, __float2half(1.0f));
    wmma::fill_fragment(acc, 0.0f);
    wmma::mma_sync(acc, fa, fb, acc);  // @small_block
    out[threadIdx.x] = acc.x[0];
}

TEST(Wmma, FilledFragmentsMultiplyInAFullBlock) {
    DeviceBuffer<float> out(64);
    mma_in_small_block<<<1, 64>>>(out.get());
    ASSERT_CUDA_OK(launch_result().sync);
    cudaError_t err = cudaSuccess;
    auto got = out.download(&err);
    ASSERT_CUDA_OK(err);
    for (float v : got) EXPECT_EQ(v, 16.0f);
}

// ---- Faults ---------------------------------------------------------------------------------------

__global__ void load_at(const __half* p, unsigned ldm, float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, p, ldm);  // @load_at
    out[threadIdx.x] = __half2float(fa.x[0]);
}

TEST(WmmaFaults, MisalignedTilePointerIsAMisalignedAddress) {
    DeviceBuffer<__half> buf(16 * 24 + 64);
    DeviceBuffer<float> out(32);
    ASSERT_CUDA_OK(cudaMemset(buf.get(), 0, (16 * 24 + 64) * sizeof(__half)));
    std::string report;
    auto r = cusim_test::finish_within(std::chrono::seconds(30), "load_at",
                                       [&] { load_at<<<1, 32>>>(buf.get() + 1, 24, out.get()); }, &report);
    EXPECT_CUDA(cudaErrorMisalignedAddress, r.sync);
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(cusim_test::report_contains(
            report, {"nvcuda::wmma::load_matrix_sync", "not 128-bit (16-byte) aligned", FILE_LINE("load_at")}));
#endif
}

#ifdef CUSIM
// On a GPU these are undefined behaviour (wrong values or a hang); cusim stops the kernel and says why.

TEST(WmmaFaults, LeadingDimensionNotAMultipleOf16BytesIsReported) {
    DeviceBuffer<__half> buf(16 * 24);
    DeviceBuffer<float> out(32);
    ASSERT_CUDA_OK(cudaMemset(buf.get(), 0, 16 * 24 * sizeof(__half)));
    std::string report;
    auto r = cusim_test::finish_within(std::chrono::seconds(30), "load_at",
                                       [&] { load_at<<<1, 32>>>(buf.get(), 20, out.get()); }, &report);
    EXPECT_CUDA(cudaErrorMisalignedAddress, r.sync);
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(cusim_test::report_contains(report, {"ldm * 2 = 40 bytes is not a multiple of 16"}));
}

__global__ void half_warp_loads(const __half* p, float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    if (threadIdx.x < 16) {
        wmma::load_matrix_sync(fa, p, 16);  // @half_warp
        out[threadIdx.x] = __half2float(fa.x[0]);
    }
}

TEST(WmmaFaults, LoadByHalfAWarpIsReported) {
    DeviceBuffer<__half> buf(256);
    DeviceBuffer<float> out(32);
    ASSERT_CUDA_OK(cudaMemset(buf.get(), 0, 256 * sizeof(__half)));
    std::string report;
    auto r = cusim_test::finish_within(std::chrono::seconds(30), "half_warp_loads",
                                       [&] { half_warp_loads<<<1, 32>>>(buf.get(), out.get()); }, &report);
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(cusim_test::report_contains(report, {"Warp synchronization error", "nvcuda::wmma::load_matrix_sync",
                                                         FILE_LINE("half_warp"), "lanes 0xffff0000 have exited"}));
}

__global__ void lanes_disagree(const __half* p, float* out) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, p + (threadIdx.x == 5 ? 256 : 0), 16);  // @disagree
    out[threadIdx.x] = __half2float(fa.x[0]);
}

TEST(WmmaFaults, LanesPassingDifferentPointersAreReported) {
    DeviceBuffer<__half> buf(512);
    DeviceBuffer<float> out(32);
    ASSERT_CUDA_OK(cudaMemset(buf.get(), 0, 512 * sizeof(__half)));
    std::string report;
    auto r = cusim_test::finish_within(std::chrono::seconds(30), "lanes_disagree",
                                       [&] { lanes_disagree<<<1, 32>>>(buf.get(), out.get()); }, &report);
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(cusim_test::report_contains(report, {"nvcuda::wmma::load_matrix_sync", FILE_LINE("disagree"),
                                                         "but lane 5 passes pointer"}));
}

TEST(WmmaFaults, WarpOfFewerThan32ThreadsIsReported) {
    DeviceBuffer<float> out(64);
    std::string report;
    auto r = cusim_test::finish_within(std::chrono::seconds(30), "mma_in_small_block",
                                       [&] { mma_in_small_block<<<1, 48>>>(out.get()); }, &report);
    EXPECT_CUDA(cudaErrorLaunchFailure, r.sync);
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(cusim_test::report_contains(report, {"nvcuda::wmma::mma_sync", FILE_LINE("small_block"),
                                                         "need all 32 lanes of a warp"}));
}

#endif
