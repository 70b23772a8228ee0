// cuBLAS and cuBLASLt on cusim (common/cusim/src/cublas.cpp, cublaslt.cpp), checked against a
// naive double-precision reference. The same file builds with nvcc against the real libraries.
//
// - Integer-valued data in small ranges and alpha, beta in {0, +-0.5, 1, 2}: every partial sum
//   is exact in float (and in half/bf16 for the inputs), so results are compared bit for bit in
//   any summation order; one random-data case uses Higham's bound for a dot product of k terms.
// - Odd shapes (1, 7, 33, 65 x 17 x 9, k = 0), every transpose combination, lda/ldb/ldc larger
//   than needed with NaN in the padding: reading the padding of A or B makes the result NaN, and
//   writing the padding of C shows as changed bits.
// - beta == 0 with C full of NaN: cuBLAS must not read C then.
// - Status codes of invalid arguments are cuBLAS's documented ones.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;

namespace {

::testing::AssertionResult status_is(const char* expected_expr, const char* actual_expr, cublasStatus_t expected,
                                     cublasStatus_t actual) {
    if (expected == actual) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << actual_expr << " returned " << cublasGetStatusName(actual) << ", expected "
                                         << expected_expr << " = " << cublasGetStatusName(expected);
}

}  // namespace

#define EXPECT_CUBLAS(expected, expr) EXPECT_PRED_FORMAT2(status_is, expected, expr)
#define ASSERT_CUBLAS(expected, expr) ASSERT_PRED_FORMAT2(status_is, expected, expr)
#define ASSERT_CUBLAS_OK(expr) ASSERT_CUBLAS(CUBLAS_STATUS_SUCCESS, expr)

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A cuBLAS handle for the test's lifetime.
struct Handle {
    cublasHandle_t h = nullptr;
    Handle() { EXPECT_CUBLAS(CUBLAS_STATUS_SUCCESS, cublasCreate(&h)); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
        if (h) cublasDestroy(h);
    }
    operator cublasHandle_t() const { return h; }
};

template <class T>
std::vector<T> integers(size_t n, int lo, int hi, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(d(rng));
    return v;
}

/// A column-major rows x cols matrix with leading dimension ld: integers in [lo, hi], NaN padding.
template <class T>
std::vector<T> matrix(int rows, int cols, int ld, int lo, int hi, unsigned seed) {
    std::vector<T> m(static_cast<size_t>(ld) * std::max(cols, 1), static_cast<T>(kNaN));
    const std::vector<T> values = integers<T>(static_cast<size_t>(rows) * cols, lo, hi, seed);
    for (int c = 0; c < cols; ++c)
        for (int r = 0; r < rows; ++r) m[r + static_cast<size_t>(c) * ld] = values[r + static_cast<size_t>(c) * rows];
    return m;
}

template <class T>
void to_device_copy(DeviceBuffer<T>& buffer, const std::vector<T>& host) {
    EXPECT_CUDA_OK(buffer.upload(host));
}

/// C = alpha op(A) op(B) + beta C in double, column-major; C is not read when beta == 0.
template <class TA, class TC>
std::vector<double> reference_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
                                   const std::vector<TA>& A, int lda, const std::vector<TA>& B, int ldb, double beta,
                                   const std::vector<TC>& C, int ldc) {
    std::vector<double> out(static_cast<size_t>(m) * n);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double sum = 0;
            for (int p = 0; p < k; ++p) {
                const double a = static_cast<double>(ta == CUBLAS_OP_N ? A[i + static_cast<size_t>(p) * lda]
                                                                       : A[p + static_cast<size_t>(i) * lda]);
                const double b = static_cast<double>(tb == CUBLAS_OP_N ? B[p + static_cast<size_t>(j) * ldb]
                                                                       : B[j + static_cast<size_t>(p) * ldb]);
                sum += a * b;
            }
            const double c = beta == 0 ? 0.0 : static_cast<double>(C[i + static_cast<size_t>(j) * ldc]);
            out[i + static_cast<size_t>(j) * m] = alpha * sum + beta * c;
        }
    return out;
}

template <class T>
bool same_bits(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Every element of C equals the reference exactly, and C's padding rows kept their bits.
template <class T>
::testing::AssertionResult matches_exactly(const std::vector<T>& got, const std::vector<T>& before,
                                           const std::vector<double>& ref, int m, int n, int ldc,
                                           const std::string& what) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < ldc; ++i) {
            const size_t at = i + static_cast<size_t>(j) * ldc;
            if (i >= m) {
                if (!same_bits(got[at], before[at]))
                    return ::testing::AssertionFailure() << what << ": wrote C's padding at row " << i << ", column " << j;
                continue;
            }
            const T want = static_cast<T>(ref[i + static_cast<size_t>(j) * m]);
            if (!(got[at] == want))
                return ::testing::AssertionFailure() << what << ": C(" << i << ", " << j << ") = " << got[at]
                                                     << ", expected " << want;
        }
    return ::testing::AssertionSuccess();
}

const char* op_text(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C"; }

struct Shape {
    int m, n, k;
};
const Shape kShapes[] = {{1, 1, 1}, {7, 7, 7}, {33, 33, 33}, {65, 17, 9}, {9, 65, 17}, {5, 3, 0}};
const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
struct Scalars {
    double alpha, beta;
};
const Scalars kScalars[] = {{1, 0}, {2, -1}, {0.5, 0.5}, {0, 2}, {-1, 1}};

// Runs one typed GEMM (cublasSgemm or cublasDgemm) on every shape, transpose pair and scalar pair.
template <class T, class Gemm>
void sweep_gemm(Gemm gemm, const char* name) {
    Handle handle;
    unsigned seed = 1;
    for (const Shape& s : kShapes)
        for (cublasOperation_t ta : kOps)
            for (cublasOperation_t tb : kOps)
                for (const Scalars& sc : kScalars) {
                    const int a_rows = ta == CUBLAS_OP_N ? s.m : s.k, a_cols = ta == CUBLAS_OP_N ? s.k : s.m;
                    const int b_rows = tb == CUBLAS_OP_N ? s.k : s.n, b_cols = tb == CUBLAS_OP_N ? s.n : s.k;
                    const int lda = std::max(a_rows, 1) + 3, ldb = std::max(b_rows, 1) + 1, ldc = s.m + 2;
                    const std::vector<T> A = matrix<T>(a_rows, a_cols, lda, -4, 4, ++seed);
                    const std::vector<T> B = matrix<T>(b_rows, b_cols, ldb, -4, 4, ++seed);
                    std::vector<T> C = matrix<T>(s.m, s.n, ldc, -8, 8, ++seed);
                    if (sc.beta == 0)  // output only: NaN everywhere, which a read would propagate
                        std::fill(C.begin(), C.end(), static_cast<T>(kNaN));
                    DeviceBuffer<T> dA(A.size()), dB(B.size()), dC(C.size());
                    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C);
                    const T alpha = static_cast<T>(sc.alpha), beta = static_cast<T>(sc.beta);
                    const std::string what = std::string(name) + "(" + op_text(ta) + op_text(tb) + ", m=" +
                                             std::to_string(s.m) + ", n=" + std::to_string(s.n) + ", k=" +
                                             std::to_string(s.k) + ", alpha=" + std::to_string(sc.alpha) +
                                             ", beta=" + std::to_string(sc.beta) + ")";
                    ASSERT_CUBLAS_OK(gemm(handle.h, ta, tb, s.m, s.n, s.k, &alpha, dA.get(), lda, dB.get(), ldb, &beta,
                                          dC.get(), ldc))
                        << what;
                    const auto ref = reference_gemm(ta, tb, s.m, s.n, s.k, sc.alpha, A, lda, B, ldb, sc.beta, C, ldc);
                    ASSERT_TRUE(matches_exactly(dC.download(), C, ref, s.m, s.n, ldc, what));
                }
}

}  // namespace

// ---- GEMM ----------------------------------------------------------------------------------------

TEST(CublasGemm, SgemmMatchesReferenceOnEveryTransposeAndOddShape) {
    sweep_gemm<float>([](auto... args) { return cublasSgemm(args...); }, "cublasSgemm");
}

TEST(CublasGemm, DgemmMatchesReferenceOnEveryTransposeAndOddShape) {
    sweep_gemm<double>([](auto... args) { return cublasDgemm(args...); }, "cublasDgemm");
}

TEST(CublasGemm, SgemmRandomDataWithinHighamBound) {
    Handle handle;
    const int m = 65, n = 17, k = 900, lda = m, ldb = k, ldc = m;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> A(static_cast<size_t>(lda) * k), B(static_cast<size_t>(ldb) * n), C(static_cast<size_t>(ldc) * n);
    for (auto* v : {&A, &B, &C})
        for (float& x : *v) x = d(rng);
    DeviceBuffer<float> dA(A.size()), dB(B.size()), dC(C.size());
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C);
    const float alpha = 1.5f, beta = -0.75f;
    ASSERT_CUBLAS_OK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), lda, dB.get(), ldb, &beta,
                                 dC.get(), ldc));
    const std::vector<float> got = dC.download();
    const double u = std::ldexp(1.0, -24), gamma = (k + 2) * u / (1 - (k + 2) * u);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double sum = 0, abs_sum = 0;
            for (int p = 0; p < k; ++p) {
                const double t = double(A[i + p * lda]) * B[p + j * ldb];
                sum += t, abs_sum += std::fabs(t);
            }
            const double c = C[i + j * ldc], ref = alpha * sum + beta * c;
            const double bound = gamma * (std::fabs(alpha) * abs_sum + std::fabs(beta * c));
            ASSERT_LE(std::fabs(got[i + j * ldc] - ref), bound) << "C(" << i << ", " << j << ")";
        }
}

TEST(CublasGemm, DevicePointerModeReadsAlphaAndBetaFromDeviceMemory) {
    Handle handle;
    cublasPointerMode_t mode = CUBLAS_POINTER_MODE_DEVICE;
    ASSERT_CUBLAS_OK(cublasGetPointerMode(handle, &mode));
    EXPECT_EQ(mode, CUBLAS_POINTER_MODE_HOST);  // the default
    ASSERT_CUBLAS_OK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
    ASSERT_CUBLAS_OK(cublasGetPointerMode(handle, &mode));
    EXPECT_EQ(mode, CUBLAS_POINTER_MODE_DEVICE);
    const int m = 7, n = 5, k = 3;
    const std::vector<float> A = matrix<float>(m, k, m, -3, 3, 11), B = matrix<float>(k, n, k, -3, 3, 12),
                             C = matrix<float>(m, n, m, -3, 3, 13);
    DeviceBuffer<float> dA(A.size()), dB(B.size()), dC(C.size()), scalars(2);
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C);
    ASSERT_CUDA_OK(scalars.upload({2.0f, -0.5f}));
    ASSERT_CUBLAS_OK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, scalars.get(), dA.get(), m, dB.get(), k,
                                 scalars.get() + 1, dC.get(), m));
    const auto ref = reference_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 2.0, A, m, B, k, -0.5, C, m);
    EXPECT_TRUE(matches_exactly(dC.download(), C, ref, m, n, m, "device pointer mode"));

    // A reduction's result goes to device memory in this mode.
    DeviceBuffer<float> x(5), result(1);
    ASSERT_CUDA_OK(x.upload({1, 2, 3, 4, 5}));
    ASSERT_CUBLAS_OK(cublasSdot(handle, 5, x.get(), 1, x.get(), 1, result.get()));
    EXPECT_EQ(result.download()[0], 55.0f);
}

TEST(CublasGemm, StridedBatchedWithStrideZeroBroadcastsA) {
    Handle handle;
    const int m = 9, n = 7, k = 5, batch = 4, lda = m + 1, ldb = k, ldc = m;
    const long long strideB = static_cast<long long>(ldb) * n + 3, strideC = static_cast<long long>(ldc) * n + 5;
    const std::vector<float> A = matrix<float>(m, k, lda, -4, 4, 21);  // one A for every batch: stride 0
    std::vector<float> B(static_cast<size_t>(strideB) * batch, kNaN), C(static_cast<size_t>(strideC) * batch, kNaN);
    for (int b = 0; b < batch; ++b) {
        const std::vector<float> Bb = matrix<float>(k, n, ldb, -4, 4, 30 + b), Cb = matrix<float>(m, n, ldc, -4, 4, 40 + b);
        std::copy(Bb.begin(), Bb.end(), B.begin() + b * strideB);
        std::copy(Cb.begin(), Cb.end(), C.begin() + b * strideC);
    }
    DeviceBuffer<float> dA(A.size()), dB(B.size()), dC(C.size());
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C);
    const float alpha = 1.0f, beta = 2.0f;
    ASSERT_CUBLAS_OK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), lda, 0,
                                               dB.get(), ldb, strideB, &beta, dC.get(), ldc, strideC, batch));
    const std::vector<float> got = dC.download();
    for (int b = 0; b < batch; ++b) {
        const std::vector<float> Bb(B.begin() + b * strideB, B.begin() + b * strideB + ldb * n);
        const std::vector<float> Cb(C.begin() + b * strideC, C.begin() + (b + 1) * strideC);
        const std::vector<float> gotb(got.begin() + b * strideC, got.begin() + (b + 1) * strideC);
        const auto ref = reference_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.0, A, lda, Bb, ldb, 2.0, Cb, ldc);
        EXPECT_TRUE(matches_exactly(gotb, Cb, ref, m, n, ldc, "batch " + std::to_string(b)));
        // The gap between two C matrices is not part of either.
        for (long long i = static_cast<long long>(ldc) * n; i < strideC; ++i) EXPECT_TRUE(std::isnan(gotb[i]));
    }

    // The double version, transposed, batch count 0 (nothing happens) and 2.
    const double one = 1, zero = 0;
    DeviceBuffer<double> dd(4);
    ASSERT_CUDA_OK(dd.upload({1, 2, 3, 4}));
    EXPECT_CUBLAS(CUBLAS_STATUS_SUCCESS, cublasDgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 2, &one,
                                                                  dd.get(), 2, 2, dd.get(), 2, 2, &zero, dd.get(), 1, 1, 0));
    EXPECT_EQ(dd.download(), (std::vector<double>{1, 2, 3, 4}));
    DeviceBuffer<double> out(2);
    ASSERT_CUBLAS_OK(cublasDgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, 2, &one, dd.get(), 2, 2, dd.get(),
                                               2, 2, &zero, out.get(), 1, 1, 2));
    EXPECT_EQ(out.download(), (std::vector<double>{5, 25}));  // 1*1 + 2*2, 3*3 + 4*4
}

TEST(CublasGemm, SgemmBatchedTakesADeviceArrayOfPointers) {
    Handle handle;
    const int m = 5, n = 3, k = 4, batch = 3;
    std::vector<std::vector<float>> A, B;
    std::vector<std::unique_ptr<DeviceBuffer<float>>> dA, dB, dC;
    std::vector<const float*> a_ptrs, b_ptrs;
    std::vector<float*> c_ptrs;
    for (int b = 0; b < batch; ++b) {
        A.push_back(matrix<float>(k, m, k, -4, 4, 50 + b));  // stored k x m: op T
        B.push_back(matrix<float>(k, n, k, -4, 4, 60 + b));
        dA.push_back(std::make_unique<DeviceBuffer<float>>(A.back().size()));
        dB.push_back(std::make_unique<DeviceBuffer<float>>(B.back().size()));
        dC.push_back(std::make_unique<DeviceBuffer<float>>(static_cast<size_t>(m) * n));
        to_device_copy(*dA.back(), A.back()), to_device_copy(*dB.back(), B.back());
        ASSERT_CUDA_OK(dC.back()->fill_bytes(0xFF));  // NaN: beta == 0 must not read it
        a_ptrs.push_back(dA.back()->get()), b_ptrs.push_back(dB.back()->get()), c_ptrs.push_back(dC.back()->get());
    }
    DeviceBuffer<const float*> d_a_ptrs(batch), d_b_ptrs(batch);
    DeviceBuffer<float*> d_c_ptrs(batch);
    ASSERT_CUDA_OK(d_a_ptrs.upload(a_ptrs));
    ASSERT_CUDA_OK(d_b_ptrs.upload(b_ptrs));
    ASSERT_CUDA_OK(d_c_ptrs.upload(c_ptrs));
    const float alpha = -1.0f, beta = 0.0f;
    ASSERT_CUBLAS_OK(cublasSgemmBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, d_a_ptrs.get(), k,
                                        d_b_ptrs.get(), k, &beta, d_c_ptrs.get(), m, batch));
    for (int b = 0; b < batch; ++b) {
        const std::vector<float> none(static_cast<size_t>(m) * n, 0.0f);
        const auto ref = reference_gemm(CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, -1.0, A[b], k, B[b], k, 0.0, none, m);
        EXPECT_TRUE(matches_exactly(dC[b]->download(), none, ref, m, n, m, "batch " + std::to_string(b)));
    }
}

// ---- GemmEx: fp32 with any fp32 compute type, bf16 and half inputs ------------------------------

template <class In, class Out>
void check_gemm_ex(cudaDataType in_type, cudaDataType out_type, cublasComputeType_t compute, cublasOperation_t ta,
                   cublasOperation_t tb) {
    Handle handle;
    const int m = 65, n = 17, k = 9;
    const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
    const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
    const int lda = a_rows + 2, ldb = b_rows + 1, ldc = m + 3;
    // Integers in [-4, 4]: exact in half, bf16 and TF32; every sum (|.| <= 9 * 16 + 2 * 8) is exact in Out.
    const std::vector<float> Af = matrix<float>(a_rows, a_cols, lda, -4, 4, 71), Bf = matrix<float>(b_rows, b_cols, ldb, -4, 4, 72),
                             Cf = matrix<float>(m, n, ldc, -8, 8, 73);
    std::vector<In> A(Af.size()), B(Bf.size());
    std::vector<Out> C(Cf.size());
    for (size_t i = 0; i < Af.size(); ++i) A[i] = static_cast<In>(Af[i]);
    for (size_t i = 0; i < Bf.size(); ++i) B[i] = static_cast<In>(Bf[i]);
    for (size_t i = 0; i < Cf.size(); ++i) C[i] = static_cast<Out>(Cf[i]);
    DeviceBuffer<In> dA(A.size()), dB(B.size());
    DeviceBuffer<Out> dC(C.size());
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C);
    const float alpha = 2.0f, beta = -1.0f;
    ASSERT_CUBLAS_OK(cublasGemmEx(handle, ta, tb, m, n, k, &alpha, dA.get(), in_type, lda, dB.get(), in_type, ldb,
                                  &beta, dC.get(), out_type, ldc, compute, CUBLAS_GEMM_DEFAULT));
    const std::vector<Out> got = dC.download();
    const auto ref = reference_gemm(ta, tb, m, n, k, 2.0, Af, lda, Bf, ldb, -1.0, Cf, ldc);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i)
            ASSERT_EQ(static_cast<float>(got[i + j * ldc]), static_cast<float>(ref[i + j * m]))
                << "C(" << i << ", " << j << "), ops " << op_text(ta) << op_text(tb);
    for (int j = 0; j < n; ++j)
        for (int i = m; i < ldc; ++i) ASSERT_TRUE(std::isnan(static_cast<float>(got[i + j * ldc]))) << "padding written";
}

TEST(CublasGemmEx, Fp32WithFp32AndTf32ComputeTypes) {
    for (cublasComputeType_t compute : {CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_FAST_TF32})
        check_gemm_ex<float, float>(CUDA_R_32F, CUDA_R_32F, compute, CUBLAS_OP_T, CUBLAS_OP_N);
}

TEST(CublasGemmEx, Bf16InputsWithFp32ComputeAndOutput) {
    for (cublasOperation_t ta : kOps)
        for (cublasOperation_t tb : kOps)
            check_gemm_ex<__nv_bfloat16, float>(CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, ta, tb);
}

TEST(CublasGemmEx, Bf16AndHalfOutputs) {
    check_gemm_ex<__nv_bfloat16, __nv_bfloat16>(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_T);
    check_gemm_ex<__half, __half>(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_T);
    check_gemm_ex<__half, float>(CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_N);
}

TEST(CublasGemmEx, StridedBatchedBf16) {
    Handle handle;
    const int m = 7, n = 5, k = 3, batch = 3;
    const long long strideA = m * k, strideB = k * n, strideC = m * n;
    const std::vector<float> Af = integers<float>(strideA * batch, -4, 4, 81), Bf = integers<float>(strideB * batch, -4, 4, 82);
    std::vector<__nv_bfloat16> A(Af.size()), B(Bf.size());
    for (size_t i = 0; i < Af.size(); ++i) A[i] = __float2bfloat16(Af[i]);
    for (size_t i = 0; i < Bf.size(); ++i) B[i] = __float2bfloat16(Bf[i]);
    DeviceBuffer<__nv_bfloat16> dA(A.size()), dB(B.size());
    DeviceBuffer<float> dC(strideC * batch);
    to_device_copy(dA, A), to_device_copy(dB, B);
    ASSERT_CUDA_OK(dC.fill_bytes(0xFF));
    const float alpha = 1.0f, beta = 0.0f;
    ASSERT_CUBLAS_OK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), CUDA_R_16BF,
                                                m, strideA, dB.get(), CUDA_R_16BF, k, strideB, &beta, dC.get(),
                                                CUDA_R_32F, m, strideC, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    const std::vector<float> got = dC.download();
    for (int b = 0; b < batch; ++b) {
        const std::vector<float> Ab(Af.begin() + b * strideA, Af.begin() + (b + 1) * strideA);
        const std::vector<float> Bb(Bf.begin() + b * strideB, Bf.begin() + (b + 1) * strideB);
        const std::vector<float> gotb(got.begin() + b * strideC, got.begin() + (b + 1) * strideC);
        const auto ref = reference_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.0, Ab, m, Bb, k, 0.0, gotb, m);
        EXPECT_TRUE(matches_exactly(gotb, gotb, ref, m, n, m, "batch " + std::to_string(b)));
    }
}

// ---- Level 1 and 2 ---------------------------------------------------------------------------------

TEST(CublasLevel1, AxpyDotNrm2ScalIsamaxWithStrides) {
    Handle handle;
    const int n = 33;
    const std::vector<float> x = integers<float>(2 * n, -5, 5, 91), y = integers<float>(3 * n, -5, 5, 92);
    DeviceBuffer<float> dx(x.size()), dy(y.size());
    to_device_copy(dx, x), to_device_copy(dy, y);

    float dot = 0;
    ASSERT_CUBLAS_OK(cublasSdot(handle, n, dx.get(), 2, dy.get(), 3, &dot));
    double want = 0;
    for (int i = 0; i < n; ++i) want += double(x[2 * i]) * y[3 * i];
    EXPECT_EQ(dot, static_cast<float>(want));

    float nrm = 0;
    ASSERT_CUBLAS_OK(cublasSnrm2(handle, n, dx.get(), 2, &nrm));
    double sq = 0;
    for (int i = 0; i < n; ++i) sq += double(x[2 * i]) * x[2 * i];
    EXPECT_NEAR(nrm, std::sqrt(sq), 4e-7 * std::sqrt(sq));

    const float alpha = -0.5f;
    ASSERT_CUBLAS_OK(cublasSaxpy(handle, n, &alpha, dx.get(), 2, dy.get(), 3));
    std::vector<float> got = dy.download();
    for (int i = 0; i < 3 * n; ++i)
        EXPECT_EQ(got[i], i % 3 == 0 ? y[i] + alpha * x[2 * (i / 3)] : y[i]) << "y[" << i << "]";

    const float scale = 3.0f;
    ASSERT_CUBLAS_OK(cublasSscal(handle, n, &scale, dx.get(), 2));
    got = dx.download();
    for (int i = 0; i < 2 * n; ++i) EXPECT_EQ(got[i], i % 2 == 0 ? 3.0f * x[i] : x[i]) << "x[" << i << "]";

    // Isamax is 1-based and returns the first of equal magnitudes.
    DeviceBuffer<float> v(6);
    ASSERT_CUDA_OK(v.upload({1, -7, 3, 7, -2, 0}));
    int index = -1;
    ASSERT_CUBLAS_OK(cublasIsamax(handle, 6, v.get(), 1, &index));
    EXPECT_EQ(index, 2);
    ASSERT_CUBLAS_OK(cublasIsamax(handle, 3, v.get() + 1, 2, &index));  // -7, 7, 0
    EXPECT_EQ(index, 1);
    ASSERT_CUBLAS_OK(cublasIsamax(handle, 0, v.get(), 1, &index));
    EXPECT_EQ(index, 0);
    ASSERT_CUBLAS_OK(cublasSdot(handle, 0, v.get(), 1, v.get(), 1, &dot));
    EXPECT_EQ(dot, 0.0f);
}

TEST(CublasLevel2, SgemvBothTransposesWithPaddingAndBetaZero) {
    Handle handle;
    const int m = 33, n = 7, lda = m + 4;
    const std::vector<float> A = matrix<float>(m, n, lda, -4, 4, 101);
    for (cublasOperation_t trans : {CUBLAS_OP_N, CUBLAS_OP_T})
        for (const Scalars& sc : {Scalars{1, 0}, Scalars{2, -1}}) {
            const int lenx = trans == CUBLAS_OP_N ? n : m, leny = trans == CUBLAS_OP_N ? m : n;
            const std::vector<float> x = integers<float>(2 * lenx, -4, 4, 102);
            std::vector<float> y = integers<float>(leny, -4, 4, 103);
            if (sc.beta == 0) std::fill(y.begin(), y.end(), kNaN);
            DeviceBuffer<float> dA(A.size()), dx(x.size()), dy(y.size());
            to_device_copy(dA, A), to_device_copy(dx, x), to_device_copy(dy, y);
            const float alpha = static_cast<float>(sc.alpha), beta = static_cast<float>(sc.beta);
            ASSERT_CUBLAS_OK(cublasSgemv(handle, trans, m, n, &alpha, dA.get(), lda, dx.get(), 2, &beta, dy.get(), 1));
            const std::vector<float> got = dy.download();
            for (int i = 0; i < leny; ++i) {
                double sum = 0;
                for (int j = 0; j < lenx; ++j)
                    sum += double(trans == CUBLAS_OP_N ? A[i + j * lda] : A[j + i * lda]) * x[2 * j];
                const double want = sc.alpha * sum + (sc.beta == 0 ? 0.0 : sc.beta * y[i]);
                EXPECT_EQ(got[i], static_cast<float>(want)) << "y[" << i << "], trans " << op_text(trans);
            }
        }
}

// ---- Handle state and status codes --------------------------------------------------------------------

TEST(CublasHandle, StreamMathModeVersionAndStatusText) {
    Handle handle;
    cudaStream_t stream = nullptr, got = reinterpret_cast<cudaStream_t>(1);
    ASSERT_CUDA_OK(cudaStreamCreate(&stream));
    ASSERT_CUBLAS_OK(cublasGetStream(handle, &got));
    EXPECT_EQ(got, nullptr);
    ASSERT_CUBLAS_OK(cublasSetStream(handle, stream));
    ASSERT_CUBLAS_OK(cublasGetStream(handle, &got));
    EXPECT_EQ(got, stream);
    // Work on the stream is complete after a stream synchronization.
    DeviceBuffer<float> x(3);
    ASSERT_CUDA_OK(x.upload({1, 2, 3}));
    const float two = 2.0f;
    ASSERT_CUBLAS_OK(cublasSscal(handle, 3, &two, x.get(), 1));
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(x.download(), (std::vector<float>{2, 4, 6}));
    ASSERT_CUBLAS_OK(cublasSetStream(handle, nullptr));
    ASSERT_CUDA_OK(cudaStreamDestroy(stream));

    cublasMath_t math = CUBLAS_PEDANTIC_MATH;
    ASSERT_CUBLAS_OK(cublasGetMathMode(handle, &math));
    EXPECT_EQ(math, CUBLAS_DEFAULT_MATH);
    ASSERT_CUBLAS_OK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
    ASSERT_CUBLAS_OK(cublasGetMathMode(handle, &math));
    EXPECT_EQ(math, CUBLAS_TF32_TENSOR_OP_MATH);

    int version = 0;
    ASSERT_CUBLAS_OK(cublasGetVersion(handle, &version));
    EXPECT_GE(version, 10000);
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
    EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
    EXPECT_GT(std::strlen(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)), 0u);
}

TEST(CublasStatus, InvalidArgumentsReturnCublasCodes) {
    Handle handle;
    DeviceBuffer<float> buf(4096);
    float* p = buf.get();
    const float one = 1.0f;
    auto sgemm = [&](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb,
                     int ldc) { return cublasSgemm(h, ta, tb, m, n, k, &one, p, lda, p, ldb, &one, p, ldc); };
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    EXPECT_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED, sgemm(nullptr, N, N, 4, 4, 4, 4, 4, 4));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, -1, 4, 4, 4, 4, 4));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 4, -1, 4, 4, 4, 4));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 4, 4, -1, 4, 4, 4));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, static_cast<cublasOperation_t>(7), N, 4, 4, 4, 4, 4, 4));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 8, 4, 2, 7, 2, 8));    // lda < m (op N)
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, T, N, 2, 4, 8, 7, 8, 2));    // lda < k (op T)
    EXPECT_CUBLAS(CUBLAS_STATUS_SUCCESS, sgemm(handle, T, N, 8, 4, 2, 2, 2, 8));          // lda >= k is enough for op T
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 4, 4, 8, 4, 7, 4));    // ldb < k (op N)
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, T, 4, 8, 2, 4, 7, 4));    // ldb < n (op T)
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 8, 4, 2, 8, 2, 7));    // ldc < m
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, sgemm(handle, N, N, 0, 4, 2, 0, 2, 0));    // lda, ldc < max(1, m)
    EXPECT_CUBLAS(CUBLAS_STATUS_SUCCESS, sgemm(handle, N, N, 0, 4, 2, 1, 2, 1));          // m = 0: nothing to do
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE,
                  cublasSgemmStridedBatched(handle, N, N, 2, 2, 2, &one, p, 2, 4, p, 2, 4, &one, p, 2, 4, -1));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, cublasSgemv(handle, N, 4, 4, &one, p, 3, p, 1, &one, p, 1));  // lda < m
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, cublasSgemv(handle, N, 4, 4, &one, p, 4, p, 0, &one, p, 1));  // incx = 0
    // GemmEx: A and B of different types is not a supported combination.
    EXPECT_CUBLAS(CUBLAS_STATUS_NOT_SUPPORTED,
                  cublasGemmEx(handle, N, N, 4, 4, 4, &one, p, CUDA_R_32F, 4, p, CUDA_R_16F, 4, &one, p, CUDA_R_32F, 4,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE,
                  cublasGemmEx(handle, N, N, 4, 4, 4, &one, p, CUDA_R_32F, 3, p, CUDA_R_32F, 4, &one, p, CUDA_R_32F, 4,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    EXPECT_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED, cublasSetStream(nullptr, nullptr));
    EXPECT_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED, cublasSetMathMode(nullptr, CUBLAS_DEFAULT_MATH));
#ifdef CUSIM
    // cusim remembers destroyed handles (a GPU's behaviour with one is undefined).
    cublasHandle_t gone = nullptr;
    ASSERT_CUBLAS_OK(cublasCreate(&gone));
    ASSERT_CUBLAS_OK(cublasDestroy(gone));
    EXPECT_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED, sgemm(gone, N, N, 4, 4, 4, 4, 4, 4));
    // And says which argument is wrong.
    cusim_test::StderrCapture capture;
    (void)sgemm(handle, N, N, 8, 4, 2, 7, 2, 8);
    EXPECT_NE(capture.take().find("lda = 7 < max(1, m = 8)"), std::string::npos);
#endif
}

// ---- cuBLASLt -------------------------------------------------------------------------------------------

namespace {

/// The descriptors of one cublasLtMatmul, destroyed with the test.
struct LtMatmul {
    cublasLtHandle_t lt = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~LtMatmul() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        for (auto l : {a, b, c, d})
            if (l) cublasLtMatrixLayoutDestroy(l);
        if (desc) cublasLtMatmulDescDestroy(desc);
        if (lt) cublasLtDestroy(lt);
    }
};

float gelu_tanh(double x) {
    return static_cast<float>(0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
}

}  // namespace

// D = epilogue(alpha op(A) op(B) + beta C + bias), C and D separate, A transposed, batch of 2 with
// strided offsets: every value an integer, so bias, ReLU and the batch offsets are checked exactly.
TEST(CublasLt, MatmulWithBiasEpiloguesAndStridedBatches) {
    const int m = 33, n = 7, k = 9, batch = 2;
    const int lda = k + 1, ldb = k, ldc = m + 2, ldd = m;  // A is stored k x m (op T)
    const long long sa = static_cast<long long>(lda) * m, sb = static_cast<long long>(ldb) * n,
                    sc = static_cast<long long>(ldc) * n, sd = static_cast<long long>(ldd) * n;
    const std::vector<float> A = matrix<float>(k, m * batch, lda, -4, 4, 111), B = matrix<float>(k, n * batch, ldb, -4, 4, 112),
                             C = matrix<float>(m, n * batch, ldc, -8, 8, 113), bias = integers<float>(m * batch, -20, 20, 114);
    DeviceBuffer<float> dA(A.size()), dB(B.size()), dC(C.size()), dD(sd * batch), dbias(bias.size());
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dC, C), to_device_copy(dbias, bias);

    for (cublasLtEpilogue_t epilogue : {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS,
                                        CUBLASLT_EPILOGUE_RELU}) {
        LtMatmul op;
        ASSERT_CUBLAS_OK(cublasLtCreate(&op.lt));
        ASSERT_CUBLAS_OK(cublasLtMatmulDescCreate(&op.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        const int32_t trans_a = CUBLAS_OP_T;
        ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
        ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
        const float* bias_ptr = dbias.get();
        const int64_t bias_stride = m;
        if (epilogue & CUBLASLT_EPILOGUE_BIAS) {
            ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr,
                                                            sizeof bias_ptr));
            ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                                            sizeof bias_stride));
        }
        ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.a, CUDA_R_32F, k, m, lda));
        ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.b, CUDA_R_32F, k, n, ldb));
        ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.c, CUDA_R_32F, m, n, ldc));
        ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.d, CUDA_R_32F, m, n, ldd));
        const int32_t count = batch;
        for (auto [layout, stride] : {std::pair{op.a, sa}, std::pair{op.b, sb}, std::pair{op.c, sc}, std::pair{op.d, sd}}) {
            const int64_t s = stride;
            ASSERT_CUBLAS_OK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            ASSERT_CUBLAS_OK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s));
        }
        ASSERT_CUBLAS_OK(cublasLtMatmulPreferenceCreate(&op.pref));
        const uint64_t workspace = 0;
        ASSERT_CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(op.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                              sizeof workspace));
        cublasLtMatmulHeuristicResult_t heuristic{};
        int found = 0;
        ASSERT_CUBLAS_OK(cublasLtMatmulAlgoGetHeuristic(op.lt, op.desc, op.a, op.b, op.c, op.d, op.pref, 1, &heuristic, &found));
        ASSERT_GE(found, 1);
        ASSERT_CUDA_OK(dD.fill_bytes(0xFF));
        const float alpha = 1.0f, beta = 1.0f;
        ASSERT_CUBLAS_OK(cublasLtMatmul(op.lt, op.desc, &alpha, dA.get(), op.a, dB.get(), op.b, &beta, dC.get(), op.c,
                                        dD.get(), op.d, &heuristic.algo, nullptr, 0, nullptr));
        ASSERT_CUDA_OK(cudaDeviceSynchronize());
        const std::vector<float> got = dD.download();
        const std::vector<float> c_after = dC.download();
        EXPECT_EQ(std::memcmp(c_after.data(), C.data(), C.size() * sizeof(float)), 0) << "C is an input when D is separate";
        for (int bt = 0; bt < batch; ++bt)
            for (int j = 0; j < n; ++j)
                for (int i = 0; i < m; ++i) {
                    double v = 0;
                    for (int p = 0; p < k; ++p) v += double(A[bt * sa + p + i * lda]) * B[bt * sb + p + j * ldb];
                    v += C[bt * sc + i + j * ldc];
                    if (epilogue & CUBLASLT_EPILOGUE_BIAS) v += bias[bt * m + i];
                    if (epilogue & CUBLASLT_EPILOGUE_RELU) v = std::max(v, 0.0);
                    ASSERT_EQ(got[bt * sd + i + j * ldd], static_cast<float>(v))
                        << "epilogue " << epilogue << ", batch " << bt << ", D(" << i << ", " << j << ")";
                }
    }
}

TEST(CublasLt, Bf16InputsFp32OutputGeluBiasBetaZeroInPlace) {
    const int m = 17, n = 5, k = 8;
    const std::vector<float> Af = integers<float>(m * k, -2, 2, 121), Bf = integers<float>(k * n, -2, 2, 122),
                             bias = integers<float>(m, -3, 3, 123);
    std::vector<__nv_bfloat16> A(Af.size()), B(Bf.size());
    for (size_t i = 0; i < Af.size(); ++i) A[i] = __float2bfloat16(Af[i]);
    for (size_t i = 0; i < Bf.size(); ++i) B[i] = __float2bfloat16(Bf[i]);
    DeviceBuffer<__nv_bfloat16> dA(A.size()), dB(B.size());
    DeviceBuffer<float> dCD(static_cast<size_t>(m) * n), dbias(m);
    to_device_copy(dA, A), to_device_copy(dB, B), to_device_copy(dbias, bias);
    ASSERT_CUDA_OK(dCD.fill_bytes(0xFF));  // beta == 0: C (here also D) is not read
    LtMatmul op;
    ASSERT_CUBLAS_OK(cublasLtCreate(&op.lt));
    ASSERT_CUBLAS_OK(cublasLtMatmulDescCreate(&op.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    const float* bias_ptr = dbias.get();
    ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    ASSERT_CUBLAS_OK(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr));
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.a, CUDA_R_16BF, m, k, m));
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.b, CUDA_R_16BF, k, n, k));
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.c, CUDA_R_32F, m, n, m));
    const float alpha = 1.0f, beta = 0.0f;
    ASSERT_CUBLAS_OK(cublasLtMatmul(op.lt, op.desc, &alpha, dA.get(), op.a, dB.get(), op.b, &beta, dCD.get(), op.c,
                                    dCD.get(), op.c, nullptr, nullptr, 0, nullptr));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    const std::vector<float> got = dCD.download();
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double v = bias[i];
            for (int p = 0; p < k; ++p) v += double(Af[i + p * m]) * Bf[p + j * k];
            // The GPU's GELU is an approximation too: allow a few ulps of a float around tanh's form.
            EXPECT_NEAR(got[i + j * m], gelu_tanh(v), 1e-4 * std::max(1.0, std::fabs(v))) << "D(" << i << ", " << j << ")";
        }
}

TEST(CublasLt, InconsistentShapesAreInvalid) {
    LtMatmul op;
    ASSERT_CUBLAS_OK(cublasLtCreate(&op.lt));
    ASSERT_CUBLAS_OK(cublasLtMatmulDescCreate(&op.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.a, CUDA_R_32F, 4, 3, 4));
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.b, CUDA_R_32F, 5, 2, 5));  // k = 5 != 3
    ASSERT_CUBLAS_OK(cublasLtMatrixLayoutCreate(&op.c, CUDA_R_32F, 4, 2, 4));
    DeviceBuffer<float> buf(64);
    const float one = 1.0f;
    EXPECT_CUBLAS(CUBLAS_STATUS_INVALID_VALUE, cublasLtMatmul(op.lt, op.desc, &one, buf.get(), op.a, buf.get(), op.b,
                                                              &one, buf.get(), op.c, buf.get(), op.c, nullptr, nullptr,
                                                              0, nullptr));
    size_t written = 0;
    int32_t trans = -1;
    ASSERT_CUBLAS_OK(cublasLtMatmulDescGetAttribute(op.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans, &written));
    EXPECT_EQ(trans, CUBLAS_OP_N);
    EXPECT_EQ(written, sizeof trans);
}
