// cusim's cuBLAS: the commonly used subset of cublas_v2.h on a CPU BLAS (OpenBLAS through its
// CBLAS interface), with cuBLAS's column-major conventions, argument checks and status codes.
//
// Device memory on cusim is host memory, so the BLAS reads and writes it in place, and scalars in
// CUBLAS_POINTER_MODE_DEVICE are read where they are. Every call runs to completion before it
// returns (cusim's streams are always complete); the handle's stream is recorded only.
// When beta == 0, C is written without being read, as in cuBLAS (C may hold NaN).
#include "internal.h"  // first: it includes cuda_runtime.h without cusim's call-site macros

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <type_traits>
#include <vector>

#include "cublas_internal.h"
#include "cuda_bf16.h"

// The CBLAS entry points used, declared here so that no particular cblas.h is needed (Debian
// switches it between BLAS implementations). Enum arguments are ints in the C ABI.
extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double* A, int lda,
                 const double* B, int ldb, double beta, double* C, int ldc);
void cblas_sgemv(int order, int trans, int m, int n, float alpha, const float* A, int lda, const float* x, int incx,
                 float beta, float* y, int incy);
void cblas_dgemv(int order, int trans, int m, int n, double alpha, const double* A, int lda, const double* x,
                 int incx, double beta, double* y, int incy);
float cblas_sdot(int n, const float* x, int incx, const float* y, int incy);
double cblas_ddot(int n, const double* x, int incx, const double* y, int incy);
float cblas_snrm2(int n, const float* x, int incx);
double cblas_dnrm2(int n, const double* x, int incx);
float cblas_sasum(int n, const float* x, int incx);
double cblas_dasum(int n, const double* x, int incx);
void cblas_sscal(int n, float alpha, float* x, int incx);
void cblas_dscal(int n, double alpha, double* x, int incx);
void cblas_saxpy(int n, float alpha, const float* x, int incx, float* y, int incy);
void cblas_daxpy(int n, double alpha, const double* x, int incx, double* y, int incy);
void cblas_scopy(int n, const float* x, int incx, float* y, int incy);
void cblas_dcopy(int n, const double* x, int incx, double* y, int incy);
size_t cblas_isamax(int n, const float* x, int incx);
size_t cblas_idamax(int n, const double* x, int incx);
}

namespace {
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;
}

struct cublasContext {
    cudaStream_t stream = nullptr;
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
    cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
};

namespace cusim::cublas {

cublasStatus_t fail(cublasStatus_t status, const char* function, const std::string& detail) {
    if (!cusim::detail::quiet()) {
        std::fprintf(stderr, "cusim: %s: %s -> %s\n", function, detail.c_str(), cublasGetStatusName(status));
        std::fflush(stderr);
    }
    return status;
}

cublasStatus_t context_usable(const char* function) {
    if (const cudaError_t e = cusim::detail::sticky_error(); e != cudaSuccess)
        return fail(CUBLAS_STATUS_EXECUTION_FAILED, function,
                    std::string("the CUDA context holds the error ") + cudaGetErrorName(e) + " of an earlier fault");
    return CUBLAS_STATUS_SUCCESS;
}

void mark_written(void* base, int64_t rows, int64_t cols, int64_t ld, size_t element_bytes) {
    if (!cusim::detail::analysis_hooks::instrumented || rows <= 0 || cols <= 0) return;
    char* p = static_cast<char*>(base);
    if (ld == rows) {
        cusim::detail::analysis_hooks::on_host_write(p, static_cast<size_t>(rows * cols) * element_bytes);
        return;
    }
    for (int64_t c = 0; c < cols; ++c)
        cusim::detail::analysis_hooks::on_host_write(p + static_cast<size_t>(c * ld) * element_bytes,
                                                     static_cast<size_t>(rows) * element_bytes);
}

size_t element_bytes(cudaDataType type) {
    switch (type) {
        case CUDA_R_32F: return 4;
        case CUDA_R_64F: return 8;
        case CUDA_R_16F:
        case CUDA_R_16BF: return 2;
        default: return 0;
    }
}

const char* type_name(cudaDataType type) {
    switch (type) {
        case CUDA_R_32F: return "CUDA_R_32F";
        case CUDA_R_64F: return "CUDA_R_64F";
        case CUDA_R_16F: return "CUDA_R_16F";
        case CUDA_R_16BF: return "CUDA_R_16BF";
        case CUDA_R_8I: return "CUDA_R_8I";
        case CUDA_R_32I: return "CUDA_R_32I";
        case CUDA_C_32F: return "CUDA_C_32F";
        case CUDA_C_64F: return "CUDA_C_64F";
        case CUDA_R_8F_E4M3: return "CUDA_R_8F_E4M3";
        case CUDA_R_8F_E5M2: return "CUDA_R_8F_E5M2";
        default: return "an unsupported cudaDataType";
    }
}

const char* compute_name(cublasComputeType_t type) {
    switch (type) {
        case CUBLAS_COMPUTE_16F: return "CUBLAS_COMPUTE_16F";
        case CUBLAS_COMPUTE_16F_PEDANTIC: return "CUBLAS_COMPUTE_16F_PEDANTIC";
        case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
        case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
        case CUBLAS_COMPUTE_32F_FAST_16F: return "CUBLAS_COMPUTE_32F_FAST_16F";
        case CUBLAS_COMPUTE_32F_FAST_16BF: return "CUBLAS_COMPUTE_32F_FAST_16BF";
        case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
        case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: return "CUBLAS_COMPUTE_32F_EMULATED_16BFX9";
        case CUBLAS_COMPUTE_64F: return "CUBLAS_COMPUTE_64F";
        case CUBLAS_COMPUTE_64F_PEDANTIC: return "CUBLAS_COMPUTE_64F_PEDANTIC";
        case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: return "CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT";
        case CUBLAS_COMPUTE_32I: return "CUBLAS_COMPUTE_32I";
        case CUBLAS_COMPUTE_32I_PEDANTIC: return "CUBLAS_COMPUTE_32I_PEDANTIC";
    }
    return "an unknown cublasComputeType_t";
}

const char* op_name(cublasOperation_t op) {
    switch (op) {
        case CUBLAS_OP_N: return "CUBLAS_OP_N";
        case CUBLAS_OP_T: return "CUBLAS_OP_T";
        case CUBLAS_OP_C: return "CUBLAS_OP_C";
        default: return "an invalid cublasOperation_t";
    }
}

namespace {

template <class T>
T load(const void* p, cudaDataType type, int64_t i) {
    switch (type) {
        case CUDA_R_32F: return static_cast<T>(static_cast<const float*>(p)[i]);
        case CUDA_R_64F: return static_cast<T>(static_cast<const double*>(p)[i]);
        case CUDA_R_16F: return static_cast<T>(__half2float(static_cast<const __half*>(p)[i]));
        case CUDA_R_16BF: return static_cast<T>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
        default: return T(0);
    }
}

template <class T>
void store(void* p, cudaDataType type, int64_t i, T v) {
    switch (type) {
        case CUDA_R_32F: static_cast<float*>(p)[i] = static_cast<float>(v); break;
        case CUDA_R_64F: static_cast<double*>(p)[i] = static_cast<double>(v); break;
        case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
        case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
        default: break;
    }
}

void blas_gemm(int ta, int tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
    cblas_sgemm(kColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
void blas_gemm(int ta, int tb, int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
               double beta, double* C, int ldc) {
    cblas_dgemm(kColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const Matrix& A, const Matrix& B,
          T beta, const Matrix& C, const Matrix& D, const Epilogue& epilogue) {
    if (m == 0 || n == 0) return;
    // Packed column-major op(A) (m x k), op(B) (k x n) and the product (m x n), in T.
    std::vector<T> product(static_cast<size_t>(m * n), T(0));
    if (k > 0 && alpha != T(0)) {
        std::vector<T> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
        for (int64_t p = 0; p < k; ++p)
            for (int64_t i = 0; i < m; ++i) a[i + p * m] = load<T>(A.data, A.type, trans_a ? A.index(p, i) : A.index(i, p));
        for (int64_t j = 0; j < n; ++j)
            for (int64_t p = 0; p < k; ++p) b[p + j * k] = load<T>(B.data, B.type, trans_b ? B.index(j, p) : B.index(p, j));
        blas_gemm(kNoTrans, kNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a.data(),
                  static_cast<int>(m), b.data(), static_cast<int>(k), T(0), product.data(), static_cast<int>(m));
    }
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
            T v = product[i + j * m];
            if (beta != T(0)) v += beta * load<T>(C.data, C.type, C.index(i, j));
            if (epilogue.bias) v += load<T>(epilogue.bias, epilogue.bias_type, i);
            if (epilogue.relu) v = v > T(0) ? v : T(0);  // ReLU(NaN) = 0, as max(v, 0) on a GPU
            if (epilogue.gelu) {
                const T c = T(0.7978845608028654);  // sqrt(2 / pi)
                v = T(0.5) * v * (T(1) + std::tanh(c * (v + T(0.044715) * v * v * v)));
            }
            store<T>(const_cast<void*>(D.data), D.type, D.index(i, j), v);
        }
    }
    if (D.row_major)
        mark_written(const_cast<void*>(D.data), n, m, D.ld, element_bytes(D.type));
    else
        mark_written(const_cast<void*>(D.data), m, n, D.ld, element_bytes(D.type));
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const Matrix&, const Matrix&, float,
                          const Matrix&, const Matrix&, const Epilogue&);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const Matrix&, const Matrix&, double,
                           const Matrix&, const Matrix&, const Epilogue&);

}  // namespace cusim::cublas

using namespace cusim::cublas;

namespace {

std::mutex g_mu;
std::set<cublasHandle_t>& live_handles() {
    static auto* handles = new std::set<cublasHandle_t>;  // never destroyed: handles outlive statics
    return *handles;
}

bool valid(cublasHandle_t handle) {
    if (!handle) return false;
    std::lock_guard<std::mutex> lk(g_mu);
    return live_handles().count(handle) != 0;
}

cublasStatus_t not_initialized(const char* function, cublasHandle_t handle) {
    return fail(CUBLAS_STATUS_NOT_INITIALIZED, function,
                handle ? "the handle is not a live cuBLAS handle (destroyed, or never created by cublasCreate)"
                       : "the handle is NULL (create it with cublasCreate)");
}

cublasStatus_t invalid(const char* function, const std::string& detail) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, function, detail);
}

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

std::string ld_text(const char* ld_name, int ld, const char* dim_name, int dim) {
    return std::string(ld_name) + " = " + std::to_string(ld) + " < max(1, " + dim_name + " = " + std::to_string(dim) +
           ")";
}

// cuBLAS's checks of a GEMM's arguments, in the order its documentation lists them.
cublasStatus_t check_gemm(const char* fn, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const void* alpha, int lda, int ldb, const void* beta, int ldc,
                          int batch_count = 1) {
    if (!valid(handle)) return not_initialized(fn, handle);
    if (m < 0 || n < 0 || k < 0)
        return invalid(fn, "m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) +
                               ": dimensions must not be negative");
    if (!valid_op(transa) || !valid_op(transb))
        return invalid(fn, std::string("transa = ") + op_name(transa) + ", transb = " + op_name(transb) +
                               ": expected CUBLAS_OP_N, CUBLAS_OP_T or CUBLAS_OP_C");
    const bool na = transa == CUBLAS_OP_N, nb = transb == CUBLAS_OP_N;
    if (lda < std::max(1, na ? m : k))
        return invalid(fn, ld_text("lda", lda, na ? "m" : "k", na ? m : k) + " with transa = " + op_name(transa) +
                               " (A is stored " + (na ? "m x k" : "k x m") + ", column-major)");
    if (ldb < std::max(1, nb ? k : n))
        return invalid(fn, ld_text("ldb", ldb, nb ? "k" : "n", nb ? k : n) + " with transb = " + op_name(transb) +
                               " (B is stored " + (nb ? "k x n" : "n x k") + ", column-major)");
    if (ldc < std::max(1, m)) return invalid(fn, ld_text("ldc", ldc, "m", m) + " (C is m x n, column-major)");
    if (!alpha || !beta) return invalid(fn, std::string(alpha ? "beta" : "alpha") + " is NULL");
    if (batch_count < 0) return invalid(fn, "batchCount = " + std::to_string(batch_count) + " is negative");
    return context_usable(fn);
}

// C = alpha * op(A) op(B) + beta * C in place through the BLAS (float or double, column-major).
template <class T>
void native_gemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, T alpha, const T* A, int lda,
                 const T* B, int ldb, T beta, T* C, int ldc) {
    if (m == 0 || n == 0) return;
    if (beta == T(0)) {  // C is output only: never read, so NaN there does not propagate
        for (int j = 0; j < n; ++j) std::fill_n(C + static_cast<size_t>(j) * ldc, m, T(0));
    } else if (beta != T(1) && (k == 0 || alpha == T(0))) {
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < m; ++i) C[i + static_cast<size_t>(j) * ldc] *= beta;
    }
    if (k > 0 && alpha != T(0))
        blas_gemm(transa == CUBLAS_OP_N ? kNoTrans : kTrans, transb == CUBLAS_OP_N ? kNoTrans : kTrans, m, n, k, alpha,
                  A, lda, B, ldb, beta, C, ldc);
    mark_written(C, m, n, ldc, sizeof(T));
}

template <class T>
cublasStatus_t typed_gemm(const char* fn, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta,
                          T* C, int ldc) {
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc)) return s;
    native_gemm<T>(transa, transb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

template <class T>
cublasStatus_t typed_strided(const char* fn, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                             int m, int n, int k, const T* alpha, const T* A, int lda, long long strideA, const T* B,
                             int ldb, long long strideB, const T* beta, T* C, int ldc, long long strideC, int batch) {
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batch)) return s;
    const T a = *alpha, b = *beta;
    for (int i = 0; i < batch; ++i)
        native_gemm<T>(transa, transb, m, n, k, a, A + i * strideA, lda, B + i * strideB, ldb, b, C + i * strideC, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

template <class T>
cublasStatus_t typed_batched(const char* fn, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                             int m, int n, int k, const T* alpha, const T* const A[], int lda, const T* const B[],
                             int ldb, const T* beta, T* const C[], int ldc, int batch) {
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batch)) return s;
    if (batch > 0 && (!A || !B || !C)) return invalid(fn, "an array of matrix pointers is NULL");
    const T a = *alpha, b = *beta;
    for (int i = 0; i < batch; ++i) native_gemm<T>(transa, transb, m, n, k, a, A[i], lda, B[i], ldb, b, C[i], ldc);
    return CUBLAS_STATUS_SUCCESS;
}

// ---- GemmEx: the (compute type, A/B type, C type) combinations cuBLAS documents -------------------

enum class Precision { F16, F32, F64 };  // the compute type's precision: the type of alpha and beta

cublasStatus_t check_ex_types(const char* fn, cublasComputeType_t compute, cudaDataType ab_type, cudaDataType b_type,
                              cudaDataType c_type, Precision& precision) {
    auto unsupported = [&](const char* why) {
        return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                    std::string("Atype = ") + type_name(ab_type) + ", Btype = " + type_name(b_type) +
                        ", Ctype = " + type_name(c_type) + ", computeType = " + compute_name(compute) + ": " + why);
    };
    if (ab_type != b_type) return unsupported("A and B must have the same type");
    switch (compute) {
        case CUBLAS_COMPUTE_32F:
        case CUBLAS_COMPUTE_32F_PEDANTIC:
        case CUBLAS_COMPUTE_32F_FAST_16F:
        case CUBLAS_COMPUTE_32F_FAST_16BF:
        case CUBLAS_COMPUTE_32F_FAST_TF32:
        case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
            precision = Precision::F32;
            if (ab_type == CUDA_R_32F && c_type == CUDA_R_32F) return CUBLAS_STATUS_SUCCESS;
            if ((ab_type == CUDA_R_16F || ab_type == CUDA_R_16BF) && (c_type == ab_type || c_type == CUDA_R_32F))
                return CUBLAS_STATUS_SUCCESS;
            return unsupported("with a 32F compute type cusim supports A/B/C = 32F/32F/32F, 16F/16F/{16F,32F} and "
                               "16BF/16BF/{16BF,32F}");
        case CUBLAS_COMPUTE_64F:
        case CUBLAS_COMPUTE_64F_PEDANTIC:
            precision = Precision::F64;
            if (ab_type == CUDA_R_64F && c_type == CUDA_R_64F) return CUBLAS_STATUS_SUCCESS;
            return unsupported("a 64F compute type needs A, B and C of CUDA_R_64F");
        case CUBLAS_COMPUTE_16F:
        case CUBLAS_COMPUTE_16F_PEDANTIC:
            precision = Precision::F16;
            if (ab_type == CUDA_R_16F && c_type == CUDA_R_16F) return CUBLAS_STATUS_SUCCESS;
            return unsupported("a 16F compute type needs A, B and C of CUDA_R_16F");
        default: return unsupported("cusim's cuBLAS supports the 16F, 32F and 64F compute types");
    }
}

// One GemmEx matrix product (validated): fp32 and fp64 go straight to the BLAS, other types
// through the converting engine in fp32 (fp16 compute included: alpha and beta are __half).
void ex_gemm(Precision precision, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
             const void* alpha, const void* A, cudaDataType ab_type, int lda, const void* B, int ldb, const void* beta,
             void* C, cudaDataType c_type, int ldc) {
    if (precision == Precision::F64) {
        native_gemm<double>(transa, transb, m, n, k, *static_cast<const double*>(alpha), static_cast<const double*>(A),
                            lda, static_cast<const double*>(B), ldb, *static_cast<const double*>(beta),
                            static_cast<double*>(C), ldc);
        return;
    }
    float a, b;
    if (precision == Precision::F16) {
        a = __half2float(*static_cast<const __half*>(alpha));
        b = __half2float(*static_cast<const __half*>(beta));
    } else {
        a = *static_cast<const float*>(alpha);
        b = *static_cast<const float*>(beta);
    }
    if (ab_type == CUDA_R_32F && c_type == CUDA_R_32F) {
        native_gemm<float>(transa, transb, m, n, k, a, static_cast<const float*>(A), lda, static_cast<const float*>(B),
                           ldb, b, static_cast<float*>(C), ldc);
        return;
    }
    const Matrix mA{A, ab_type, lda}, mB{B, ab_type, ldb}, mC{C, c_type, ldc};
    gemm<float>(transa != CUBLAS_OP_N, transb != CUBLAS_OP_N, m, n, k, a, mA, mB, b, mC, mC);
}

// ---- Level 1 and 2 helpers ---------------------------------------------------------------------

template <class T>
void write_result(T* result, T value) {
    *result = value;
    mark_written(result, 1, 1, 1, sizeof(T));
}

}  // namespace

// The API (C linkage from its declarations in the header).

// ---- Helper functions ---------------------------------------------------------------------------

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
    if (!handle) return invalid("cublasCreate", "handle is NULL");
    if (cublasStatus_t s = context_usable("cublasCreate")) return s;
    auto* h = new cublasContext;
    std::lock_guard<std::mutex> lk(g_mu);
    live_handles().insert(h);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    bool live = false;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        live = handle && live_handles().erase(handle) != 0;
    }
    if (!live) return not_initialized("cublasDestroy", handle);
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
    if (!valid(handle)) return not_initialized("cublasGetVersion", handle);
    if (!version) return invalid("cublasGetVersion", "version is NULL");
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
    if (!value) return invalid("cublasGetProperty", "value is NULL");
    switch (type) {
        case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
        case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
        case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    }
    return invalid("cublasGetProperty", "unknown libraryPropertyType");
}

size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void*, size_t) {
    if (!valid(handle)) return not_initialized("cublasSetWorkspace", handle);
    return CUBLAS_STATUS_SUCCESS;  // the CPU BLAS allocates its own scratch
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!valid(handle)) return not_initialized("cublasSetStream", handle);
    if (!cusim::detail::valid_stream(stream)) return invalid("cublasSetStream", "the stream is not a live stream");
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
    if (!valid(handle)) return not_initialized("cublasGetStream", handle);
    if (!stream) return invalid("cublasGetStream", "streamId is NULL");
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
    if (!valid(handle)) return not_initialized("cublasGetPointerMode", handle);
    if (!mode) return invalid("cublasGetPointerMode", "mode is NULL");
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
    if (!valid(handle)) return not_initialized("cublasSetPointerMode", handle);
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return invalid("cublasSetPointerMode", "mode must be CUBLAS_POINTER_MODE_HOST or CUBLAS_POINTER_MODE_DEVICE");
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
    if (!valid(handle)) return not_initialized("cublasGetAtomicsMode", handle);
    if (!mode) return invalid("cublasGetAtomicsMode", "mode is NULL");
    *mode = handle->atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
    if (!valid(handle)) return not_initialized("cublasSetAtomicsMode", handle);
    handle->atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
    if (!valid(handle)) return not_initialized("cublasGetMathMode", handle);
    if (!mode) return invalid("cublasGetMathMode", "mode is NULL");
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!valid(handle)) return not_initialized("cublasSetMathMode", handle);
    const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
        base != CUBLAS_TF32_TENSOR_OP_MATH && base != CUBLAS_FP32_EMULATED_BF16X9_MATH &&
        base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return invalid("cublasSetMathMode", "unknown cublasMath_t " + std::to_string(static_cast<int>(mode)));
    handle->math_mode = mode;  // recorded; the CPU computes every mode in full precision
    return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "success";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
        case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
        case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
        case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
        case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
    }
    return "unknown error";
}

// ---- Host <-> device copies (device memory is host memory on cusim) ------------------------------

namespace {
cublasStatus_t copy_vector(const char* fn, int n, int elem, const void* x, int incx, void* y, int incy) {
    if (n < 0 || elem <= 0 || incx == 0 || incy == 0)
        return invalid(fn, "n = " + std::to_string(n) + ", elemSize = " + std::to_string(elem) + ", incx = " +
                               std::to_string(incx) + ", incy = " + std::to_string(incy) +
                               ": need n >= 0, elemSize > 0 and nonzero increments");
    if (n > 0 && (!x || !y)) return invalid(fn, "a vector pointer is NULL");
    for (int i = 0; i < n; ++i)
        std::memmove(static_cast<char*>(y) + static_cast<ptrdiff_t>(i) * incy * elem,
                     static_cast<const char*>(x) + static_cast<ptrdiff_t>(i) * incx * elem, static_cast<size_t>(elem));
    if (n > 0 && incy == 1) mark_written(y, n, 1, n, static_cast<size_t>(elem));
    else
        for (int i = 0; i < n; ++i) mark_written(static_cast<char*>(y) + static_cast<ptrdiff_t>(i) * incy * elem, 1, 1, 1, elem);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t copy_matrix(const char* fn, int rows, int cols, int elem, const void* A, int lda, void* B, int ldb) {
    if (rows < 0 || cols < 0 || elem <= 0 || lda < std::max(1, rows) || ldb < std::max(1, rows))
        return invalid(fn, "rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + ", elemSize = " +
                               std::to_string(elem) + ", lda = " + std::to_string(lda) + ", ldb = " +
                               std::to_string(ldb) + ": need rows, cols >= 0, elemSize > 0, lda and ldb >= max(1, rows)");
    if (rows > 0 && cols > 0 && (!A || !B)) return invalid(fn, "a matrix pointer is NULL");
    for (int c = 0; c < cols; ++c)
        std::memmove(static_cast<char*>(B) + static_cast<size_t>(c) * ldb * elem,
                     static_cast<const char*>(A) + static_cast<size_t>(c) * lda * elem, static_cast<size_t>(rows) * elem);
    mark_written(B, rows, cols, ldb, static_cast<size_t>(elem));
    return CUBLAS_STATUS_SUCCESS;
}
}  // namespace

cublasStatus_t cublasSetVector(int n, int elemSize, const void* x, int incx, void* y, int incy) {
    return copy_vector("cublasSetVector", n, elemSize, x, incx, y, incy);
}
cublasStatus_t cublasGetVector(int n, int elemSize, const void* x, int incx, void* y, int incy) {
    return copy_vector("cublasGetVector", n, elemSize, x, incx, y, incy);
}
cublasStatus_t cublasSetMatrix(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb) {
    return copy_matrix("cublasSetMatrix", rows, cols, elemSize, A, lda, B, ldb);
}
cublasStatus_t cublasGetMatrix(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb) {
    return copy_matrix("cublasGetMatrix", rows, cols, elemSize, A, lda, B, ldb);
}
cublasStatus_t cublasSetVectorAsync(int n, int elemSize, const void* x, int incx, void* y, int incy, cudaStream_t) {
    return copy_vector("cublasSetVectorAsync", n, elemSize, x, incx, y, incy);
}
cublasStatus_t cublasGetVectorAsync(int n, int elemSize, const void* x, int incx, void* y, int incy, cudaStream_t) {
    return copy_vector("cublasGetVectorAsync", n, elemSize, x, incx, y, incy);
}
cublasStatus_t cublasSetMatrixAsync(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb,
                                    cudaStream_t) {
    return copy_matrix("cublasSetMatrixAsync", rows, cols, elemSize, A, lda, B, ldb);
}
cublasStatus_t cublasGetMatrixAsync(int rows, int cols, int elemSize, const void* A, int lda, void* B, int ldb,
                                    cudaStream_t) {
    return copy_matrix("cublasGetMatrixAsync", rows, cols, elemSize, A, lda, B, ldb);
}

// ---- Level 1 --------------------------------------------------------------------------------------
// As in cuBLAS: n <= 0 (and, for the reductions, incx <= 0) is a quick return with result 0.

#define CUSIM_CUBLAS_HANDLE(fn)                                         \
    do {                                                                \
        if (!valid(handle)) return not_initialized(fn, handle);        \
        if (cublasStatus_t s_ = context_usable(fn)) return s_;          \
    } while (0)

cublasStatus_t cublasSnrm2_v2(cublasHandle_t handle, int n, const float* x, int incx, float* result) {
    CUSIM_CUBLAS_HANDLE("cublasSnrm2");
    if (!result) return invalid("cublasSnrm2", "result is NULL");
    write_result(result, n <= 0 || incx <= 0 ? 0.0f : cblas_snrm2(n, x, incx));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDnrm2_v2(cublasHandle_t handle, int n, const double* x, int incx, double* result) {
    CUSIM_CUBLAS_HANDLE("cublasDnrm2");
    if (!result) return invalid("cublasDnrm2", "result is NULL");
    write_result(result, n <= 0 || incx <= 0 ? 0.0 : cblas_dnrm2(n, x, incx));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSasum_v2(cublasHandle_t handle, int n, const float* x, int incx, float* result) {
    CUSIM_CUBLAS_HANDLE("cublasSasum");
    if (!result) return invalid("cublasSasum", "result is NULL");
    write_result(result, n <= 0 || incx <= 0 ? 0.0f : cblas_sasum(n, x, incx));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDasum_v2(cublasHandle_t handle, int n, const double* x, int incx, double* result) {
    CUSIM_CUBLAS_HANDLE("cublasDasum");
    if (!result) return invalid("cublasDasum", "result is NULL");
    write_result(result, n <= 0 || incx <= 0 ? 0.0 : cblas_dasum(n, x, incx));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSdot_v2(cublasHandle_t handle, int n, const float* x, int incx, const float* y, int incy,
                             float* result) {
    CUSIM_CUBLAS_HANDLE("cublasSdot");
    if (!result) return invalid("cublasSdot", "result is NULL");
    write_result(result, n <= 0 ? 0.0f : cblas_sdot(n, x, incx, y, incy));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDdot_v2(cublasHandle_t handle, int n, const double* x, int incx, const double* y, int incy,
                             double* result) {
    CUSIM_CUBLAS_HANDLE("cublasDdot");
    if (!result) return invalid("cublasDdot", "result is NULL");
    write_result(result, n <= 0 ? 0.0 : cblas_ddot(n, x, incx, y, incy));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasIsamax_v2(cublasHandle_t handle, int n, const float* x, int incx, int* result) {
    CUSIM_CUBLAS_HANDLE("cublasIsamax");
    if (!result) return invalid("cublasIsamax", "result is NULL");
    // 1-based, as in cuBLAS (Fortran's convention); 0 for an empty vector.
    write_result(result, n <= 0 || incx <= 0 ? 0 : static_cast<int>(cblas_isamax(n, x, incx)) + 1);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasIdamax_v2(cublasHandle_t handle, int n, const double* x, int incx, int* result) {
    CUSIM_CUBLAS_HANDLE("cublasIdamax");
    if (!result) return invalid("cublasIdamax", "result is NULL");
    write_result(result, n <= 0 || incx <= 0 ? 0 : static_cast<int>(cblas_idamax(n, x, incx)) + 1);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSscal_v2(cublasHandle_t handle, int n, const float* alpha, float* x, int incx) {
    CUSIM_CUBLAS_HANDLE("cublasSscal");
    if (!alpha) return invalid("cublasSscal", "alpha is NULL");
    if (n > 0 && incx > 0) cblas_sscal(n, *alpha, x, incx);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDscal_v2(cublasHandle_t handle, int n, const double* alpha, double* x, int incx) {
    CUSIM_CUBLAS_HANDLE("cublasDscal");
    if (!alpha) return invalid("cublasDscal", "alpha is NULL");
    if (n > 0 && incx > 0) cblas_dscal(n, *alpha, x, incx);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSaxpy_v2(cublasHandle_t handle, int n, const float* alpha, const float* x, int incx, float* y,
                              int incy) {
    CUSIM_CUBLAS_HANDLE("cublasSaxpy");
    if (!alpha) return invalid("cublasSaxpy", "alpha is NULL");
    if (n > 0) cblas_saxpy(n, *alpha, x, incx, y, incy);
    if (n > 0 && incy == 1) mark_written(y, n, 1, n, sizeof(float));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDaxpy_v2(cublasHandle_t handle, int n, const double* alpha, const double* x, int incx, double* y,
                              int incy) {
    CUSIM_CUBLAS_HANDLE("cublasDaxpy");
    if (!alpha) return invalid("cublasDaxpy", "alpha is NULL");
    if (n > 0) cblas_daxpy(n, *alpha, x, incx, y, incy);
    if (n > 0 && incy == 1) mark_written(y, n, 1, n, sizeof(double));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasScopy_v2(cublasHandle_t handle, int n, const float* x, int incx, float* y, int incy) {
    CUSIM_CUBLAS_HANDLE("cublasScopy");
    if (n > 0) cblas_scopy(n, x, incx, y, incy);
    if (n > 0 && incy == 1) mark_written(y, n, 1, n, sizeof(float));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDcopy_v2(cublasHandle_t handle, int n, const double* x, int incx, double* y, int incy) {
    CUSIM_CUBLAS_HANDLE("cublasDcopy");
    if (n > 0) cblas_dcopy(n, x, incx, y, incy);
    if (n > 0 && incy == 1) mark_written(y, n, 1, n, sizeof(double));
    return CUBLAS_STATUS_SUCCESS;
}

// ---- Level 2 --------------------------------------------------------------------------------------

namespace {
template <class T>
cublasStatus_t typed_gemv(const char* fn, cublasHandle_t handle, cublasOperation_t trans, int m, int n, const T* alpha,
                          const T* A, int lda, const T* x, int incx, const T* beta, T* y, int incy) {
    CUSIM_CUBLAS_HANDLE(fn);
    if (m < 0 || n < 0) return invalid(fn, "m = " + std::to_string(m) + ", n = " + std::to_string(n) + ": negative");
    if (lda < std::max(1, m)) return invalid(fn, ld_text("lda", lda, "m", m) + " (A is m x n, column-major)");
    if (incx == 0 || incy == 0) return invalid(fn, "incx and incy must not be 0");
    if (!valid_op(trans)) return invalid(fn, std::string("trans = ") + op_name(trans));
    if (!alpha || !beta) return invalid(fn, std::string(alpha ? "beta" : "alpha") + " is NULL");
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const int leny = trans == CUBLAS_OP_N ? m : n;
    const T a = *alpha, b = *beta;
    if (b == T(0))  // y is output only: never read (with a negative step, y still points at the lowest element)
        for (int i = 0; i < leny; ++i) y[static_cast<ptrdiff_t>(i) * std::abs(incy)] = T(0);
    if constexpr (std::is_same_v<T, float>)
        cblas_sgemv(kColMajor, trans == CUBLAS_OP_N ? kNoTrans : kTrans, m, n, a, A, lda, x, incx, b, y, incy);
    else
        cblas_dgemv(kColMajor, trans == CUBLAS_OP_N ? kNoTrans : kTrans, m, n, a, A, lda, x, incx, b, y, incy);
    if (incy == 1) mark_written(y, leny, 1, leny, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}
}  // namespace

cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float* alpha,
                              const float* A, int lda, const float* x, int incx, const float* beta, float* y,
                              int incy) {
    return typed_gemv<float>("cublasSgemv", handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}
cublasStatus_t cublasDgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const double* alpha,
                              const double* A, int lda, const double* x, int incx, const double* beta, double* y,
                              int incy) {
    return typed_gemv<double>("cublasDgemv", handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}

// ---- Level 3 --------------------------------------------------------------------------------------

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
    return typed_gemm<float>("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc) {
    return typed_gemm<double>("cublasDgemm", handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const Aarray[], int lda,
                                  const float* const Barray[], int ldb, const float* beta, float* const Carray[],
                                  int ldc, int batchCount) {
    return typed_batched<float>("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb,
                                beta, Carray, ldc, batchCount);
}
cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* const Aarray[], int lda,
                                  const double* const Barray[], int ldb, const double* beta, double* const Carray[],
                                  int ldc, int batchCount) {
    return typed_batched<double>("cublasDgemmBatched", handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray,
                                 ldb, beta, Carray, ldc, batchCount);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC, int batchCount) {
    return typed_strided<float>("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA,
                                B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* A, int lda,
                                         long long int strideA, const double* B, int ldb, long long int strideB,
                                         const double* beta, double* C, int ldc, long long int strideC,
                                         int batchCount) {
    return typed_strided<double>("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA,
                                 B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t) {
    const char* fn = "cublasGemmEx";
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc)) return s;
    Precision p;
    if (cublasStatus_t s = check_ex_types(fn, computeType, Atype, Btype, Ctype, p)) return s;
    ex_gemm(p, transa, transb, m, n, k, alpha, A, Atype, lda, B, ldb, beta, C, Ctype, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                                   int lda, const void* const Barray[], cudaDataType Btype, int ldb, const void* beta,
                                   void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t) {
    const char* fn = "cublasGemmBatchedEx";
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount))
        return s;
    Precision p;
    if (cublasStatus_t s = check_ex_types(fn, computeType, Atype, Btype, Ctype, p)) return s;
    if (batchCount > 0 && (!Aarray || !Barray || !Carray)) return invalid(fn, "an array of matrix pointers is NULL");
    for (int i = 0; i < batchCount; ++i)
        ex_gemm(p, transa, transb, m, n, k, alpha, Aarray[i], Atype, lda, Barray[i], ldb, beta, Carray[i], Ctype, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
    const char* fn = "cublasGemmStridedBatchedEx";
    if (cublasStatus_t s = check_gemm(fn, handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount))
        return s;
    Precision p;
    if (cublasStatus_t s = check_ex_types(fn, computeType, Atype, Btype, Ctype, p)) return s;
    const size_t ab = element_bytes(Atype), cb = element_bytes(Ctype);
    for (int i = 0; i < batchCount; ++i)
        ex_gemm(p, transa, transb, m, n, k, alpha, static_cast<const char*>(A) + i * strideA * static_cast<long long>(ab),
                Atype, lda, static_cast<const char*>(B) + i * strideB * static_cast<long long>(ab), ldb, beta,
                static_cast<char*>(C) + i * strideC * static_cast<long long>(cb), Ctype, ldc);
    return CUBLAS_STATUS_SUCCESS;
}
