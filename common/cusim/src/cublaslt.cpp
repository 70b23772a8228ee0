// cusim's cuBLASLt: the matmul subset of cublasLt.h on the CPU, through the converting GEMM
// engine of cublas.cpp: D = epilogue(alpha * op(A) op(B) + beta * C), C and D separate or the
// same, column- or row-major layouts, strided batches, bias/ReLU/GELU epilogues. Descriptors hold
// their attributes in plain fields; every check cuBLASLt makes of a matmul's shapes, types and
// leading dimensions is made here with its status code (INVALID_VALUE for inconsistent
// arguments, NOT_SUPPORTED for a configuration cusim does not compute).
#include "internal.h"  // first: it includes cuda_runtime.h without cusim's call-site macros

#include <climits>
#include <cstring>
#include <string>

#include "cublasLt.h"
#include "cublas_internal.h"
#include "cuda_bf16.h"

using namespace cusim::cublas;

struct cublasLtContext {
    int unused = 0;
};

struct cusimLtMatmulDesc {
    int32_t compute_type = CUBLAS_COMPUTE_32F;
    int32_t scale_type = CUDA_R_32F;
    int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N;
    int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void* bias = nullptr;
    int64_t bias_batch_stride = 0;
    int32_t bias_type = -1;  // -1: D's type
    int32_t sm_count_target = 0;
    int8_t fast_accum = 0;
};

struct cusimLtMatrixLayout {
    uint32_t type = CUDA_R_32F;
    int32_t order = CUBLASLT_ORDER_COL;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0;
    int32_t batch_count = 1;
    int64_t batch_stride = 0;  // elements
    int64_t plane_offset = 0;
};

struct cusimLtMatmulPreference {
    uint32_t search_mode = 0;
    uint64_t max_workspace = 0;
    uint32_t reduction_mask = 0;
    uint32_t align_a = 256, align_b = 256, align_c = 256, align_d = 256;
    int32_t max_waves = 0;
    uint64_t impl_mask = ~uint64_t(0);
};

namespace {

cublasStatus_t invalid(const char* fn, const std::string& detail) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, fn, detail);
}
cublasStatus_t unsupported(const char* fn, const std::string& detail) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, fn, detail);
}

// An attribute's storage: Set copies exactly sizeof(field) bytes, Get reports the size and copies.
template <class T>
cublasStatus_t set_field(const char* fn, T& field, const void* buf, size_t size) {
    if (!buf || size != sizeof(T))
        return invalid(fn, "the attribute takes " + std::to_string(sizeof(T)) + " bytes, got " + std::to_string(size) +
                               (buf ? "" : " and a NULL buffer"));
    std::memcpy(&field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

template <class T>
cublasStatus_t get_field(const char* fn, const T& field, void* buf, size_t size, size_t* written) {
    if (size == 0 && written) {  // a size query
        *written = sizeof(T);
        return CUBLAS_STATUS_SUCCESS;
    }
    if (written) *written = sizeof(T);
    if (!buf || size < sizeof(T))
        return invalid(fn, "the attribute needs a buffer of " + std::to_string(sizeof(T)) + " bytes, got " +
                               std::to_string(size));
    std::memcpy(buf, &field, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

bool valid_op(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

enum class Precision { F16, F32, F64 };

// The (compute, scale, A/B, C/D) combinations computed, as in cublasGemmEx.
cublasStatus_t check_types(const char* fn, const cusimLtMatmulDesc& d, cudaDataType ab, cudaDataType b_type,
                           cudaDataType cd, cudaDataType d_type, Precision& precision) {
    const auto compute = static_cast<cublasComputeType_t>(d.compute_type);
    const auto scale = static_cast<cudaDataType>(d.scale_type);
    const std::string what = std::string("A/B/C/D types ") + type_name(ab) + "/" + type_name(b_type) + "/" +
                             type_name(cd) + "/" + type_name(d_type) + ", compute type " + compute_name(compute) +
                             ", scale type " + type_name(scale);
    if (ab != b_type || cd != d_type) return unsupported(fn, what + ": A and B, and C and D, must have the same type");
    switch (compute) {
        case CUBLAS_COMPUTE_32F:
        case CUBLAS_COMPUTE_32F_PEDANTIC:
        case CUBLAS_COMPUTE_32F_FAST_16F:
        case CUBLAS_COMPUTE_32F_FAST_16BF:
        case CUBLAS_COMPUTE_32F_FAST_TF32:
        case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
            precision = Precision::F32;
            if (scale == CUDA_R_32F &&
                ((ab == CUDA_R_32F && cd == CUDA_R_32F) ||
                 ((ab == CUDA_R_16F || ab == CUDA_R_16BF) && (cd == ab || cd == CUDA_R_32F))))
                return CUBLAS_STATUS_SUCCESS;
            break;
        case CUBLAS_COMPUTE_64F:
        case CUBLAS_COMPUTE_64F_PEDANTIC:
            precision = Precision::F64;
            if (scale == CUDA_R_64F && ab == CUDA_R_64F && cd == CUDA_R_64F) return CUBLAS_STATUS_SUCCESS;
            break;
        case CUBLAS_COMPUTE_16F:
        case CUBLAS_COMPUTE_16F_PEDANTIC:
            precision = Precision::F16;
            if (scale == CUDA_R_16F && ab == CUDA_R_16F && cd == CUDA_R_16F) return CUBLAS_STATUS_SUCCESS;
            break;
        default: break;
    }
    return unsupported(fn, what + ": cusim computes 32F (scale 32F; A/B 32F with C/D 32F, or 16F/16BF with C/D of "
                                  "the same type or 32F), 64F (all 64F) and 16F (all 16F)");
}

std::string dims(const cusimLtMatrixLayout& l) {
    return std::to_string(l.rows) + " x " + std::to_string(l.cols);
}

// Everything cublasLtMatmul checks before it computes; the shapes and precision come back.
struct Plan {
    int64_t m = 0, n = 0, k = 0;
    int batch = 1;
    Precision precision = Precision::F32;
    Epilogue epilogue;
};

cublasStatus_t check_matmul(const char* fn, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                            cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
                            cublasLtMatrixLayout_t D, Plan& plan) {
    if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, fn, "the handle is NULL (create it with cublasLtCreate)");
    if (!desc || !A || !B || !C || !D) return invalid(fn, "a descriptor (operation, A, B, C or D layout) is NULL");
    if (!valid_op(desc->transa) || !valid_op(desc->transb))
        return invalid(fn, "CUBLASLT_MATMUL_DESC_TRANSA/TRANSB must be CUBLAS_OP_N, CUBLAS_OP_T or CUBLAS_OP_C");
    if (desc->transc != CUBLAS_OP_N) return unsupported(fn, "CUBLASLT_MATMUL_DESC_TRANSC must be CUBLAS_OP_N");
    if (desc->pointer_mode != CUBLASLT_POINTER_MODE_HOST && desc->pointer_mode != CUBLASLT_POINTER_MODE_DEVICE)
        return unsupported(fn, "cusim supports the HOST and DEVICE pointer modes (alpha and beta scalars)");
    if (cublasStatus_t s = check_types(fn, *desc, static_cast<cudaDataType>(A->type), static_cast<cudaDataType>(B->type),
                                       static_cast<cudaDataType>(C->type), static_cast<cudaDataType>(D->type),
                                       plan.precision))
        return s;
    for (const cusimLtMatrixLayout* l : {A, B, C, D}) {
        if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
            return unsupported(fn, "cusim supports the CUBLASLT_ORDER_COL and CUBLASLT_ORDER_ROW layouts");
        if (l->plane_offset != 0) return unsupported(fn, "CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET must be 0");
        if (l->rows > INT_MAX || l->cols > INT_MAX) return unsupported(fn, "a matrix has more than INT_MAX rows or columns");
        const uint64_t need = l->order == CUBLASLT_ORDER_COL ? l->rows : l->cols;
        if (l->ld < 1 || static_cast<uint64_t>(l->ld) < need)
            return invalid(fn, "a " + dims(*l) + (l->order == CUBLASLT_ORDER_COL ? " column" : " row") +
                                   "-major layout has ld = " + std::to_string(l->ld) + " < " + std::to_string(need));
        if (l->batch_count < 1) return invalid(fn, "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT must be >= 1");
    }
    const bool ta = desc->transa != CUBLAS_OP_N, tb = desc->transb != CUBLAS_OP_N;
    plan.m = static_cast<int64_t>(D->rows);
    plan.n = static_cast<int64_t>(D->cols);
    plan.k = static_cast<int64_t>(ta ? A->rows : A->cols);
    const uint64_t a_m = ta ? A->cols : A->rows, b_k = tb ? B->cols : B->rows, b_n = tb ? B->rows : B->cols;
    if (a_m != D->rows || b_n != D->cols || b_k != static_cast<uint64_t>(plan.k) || C->rows != D->rows ||
        C->cols != D->cols)
        return invalid(fn, "inconsistent shapes: A " + dims(*A) + (ta ? " (transposed)" : "") + ", B " + dims(*B) +
                               (tb ? " (transposed)" : "") + ", C " + dims(*C) + ", D " + dims(*D) +
                               ": need op(A) m x k, op(B) k x n, C and D m x n");
    plan.batch = D->batch_count;
    if (A->batch_count != plan.batch || B->batch_count != plan.batch || C->batch_count != plan.batch)
        return invalid(fn, "the layouts' CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT differ (broadcast with a batch stride of 0)");
    const uint32_t e = desc->epilogue;
    if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU && e != CUBLASLT_EPILOGUE_BIAS &&
        e != CUBLASLT_EPILOGUE_RELU_BIAS && e != CUBLASLT_EPILOGUE_GELU && e != CUBLASLT_EPILOGUE_GELU_BIAS)
        return unsupported(fn, "epilogue " + std::to_string(e) +
                                   ": cusim supports DEFAULT, RELU, BIAS, RELU_BIAS, GELU and GELU_BIAS");
    plan.epilogue = Epilogue{};
    plan.epilogue.relu = (e & CUBLASLT_EPILOGUE_RELU) != 0;
    plan.epilogue.gelu = (e & CUBLASLT_EPILOGUE_GELU) != 0;
    if (e & CUBLASLT_EPILOGUE_BIAS) {
        const auto bias_type = desc->bias_type < 0 ? static_cast<cudaDataType>(D->type)
                                                   : static_cast<cudaDataType>(desc->bias_type);
        if (element_bytes(bias_type) == 0 || (bias_type == CUDA_R_64F) != (plan.precision == Precision::F64))
            return unsupported(fn, std::string("bias type ") + type_name(bias_type) + " with D of type " +
                                       type_name(static_cast<cudaDataType>(D->type)));
        plan.epilogue.bias_type = bias_type;
        plan.epilogue.bias = desc->bias;  // checked for NULL by cublasLtMatmul
    }
    return context_usable(fn);
}

template <class T>
T scalar(const void* p, Precision precision) {
    switch (precision) {
        case Precision::F16: return static_cast<T>(__half2float(*static_cast<const __half*>(p)));
        case Precision::F32: return static_cast<T>(*static_cast<const float*>(p));
        case Precision::F64: return static_cast<T>(*static_cast<const double*>(p));
    }
    return T(0);
}

Matrix matrix(const void* base, const cusimLtMatrixLayout& l, int batch) {
    const size_t bytes = element_bytes(static_cast<cudaDataType>(l.type));
    return Matrix{static_cast<const char*>(base) + batch * l.batch_stride * static_cast<int64_t>(bytes),
                  static_cast<cudaDataType>(l.type), l.ld, l.order == CUBLASLT_ORDER_ROW};
}

template <class T>
void run(const Plan& plan, const cusimLtMatmulDesc& desc, T alpha, T beta, const void* A, const cusimLtMatrixLayout& a,
         const void* B, const cusimLtMatrixLayout& b, const void* C, const cusimLtMatrixLayout& c, void* D,
         const cusimLtMatrixLayout& d) {
    for (int i = 0; i < plan.batch; ++i) {
        Epilogue e = plan.epilogue;
        if (e.bias)
            e.bias = static_cast<const char*>(e.bias) + i * desc.bias_batch_stride * static_cast<int64_t>(element_bytes(e.bias_type));
        gemm<T>(desc.transa != CUBLAS_OP_N, desc.transb != CUBLAS_OP_N, plan.m, plan.n, plan.k, alpha, matrix(A, a, i),
                matrix(B, b, i), beta, matrix(C, c, i), matrix(D, d, i), e);
    }
}

}  // namespace

// The API (C linkage from its declarations in the header).

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    if (!handle) return invalid("cublasLtCreate", "lightHandle is NULL");
    *handle = new cublasLtContext;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    if (!handle) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy", "lightHandle is NULL");
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }
size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }
cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) { return cublasGetProperty(type, value); }
const char* cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }
const char* cublasLtGetStatusString(cublasStatus_t status) { return cublasGetStatusString(status); }

// ---- Matmul descriptor ------------------------------------------------------------------------------

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
    if (!desc) return invalid("cublasLtMatmulDescCreate", "matmulDesc is NULL");
    auto* d = new cusimLtMatmulDesc;
    d->compute_type = computeType;
    d->scale_type = scaleType;
    *desc = d;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
}

#define CUSIM_LT_DESC_FIELDS(X)                                    \
    X(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute_type)             \
    X(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale_type)                 \
    X(CUBLASLT_MATMUL_DESC_POINTER_MODE, pointer_mode)             \
    X(CUBLASLT_MATMUL_DESC_TRANSA, transa)                         \
    X(CUBLASLT_MATMUL_DESC_TRANSB, transb)                         \
    X(CUBLASLT_MATMUL_DESC_TRANSC, transc)                         \
    X(CUBLASLT_MATMUL_DESC_FILL_MODE, fill_mode)                   \
    X(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue)                     \
    X(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias)                     \
    X(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride)   \
    X(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type)              \
    X(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, sm_count_target)       \
    X(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum)

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
    const char* fn = "cublasLtMatmulDescSetAttribute";
    if (!desc) return invalid(fn, "matmulDesc is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return set_field(fn, desc->field, buf, size);
        CUSIM_LT_DESC_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t size, size_t* written) {
    const char* fn = "cublasLtMatmulDescGetAttribute";
    if (!desc) return invalid(fn, "matmulDesc is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return get_field(fn, desc->field, buf, size, written);
        CUSIM_LT_DESC_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

// ---- Matrix layout ------------------------------------------------------------------------------------

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    if (!layout) return invalid("cublasLtMatrixLayoutCreate", "matLayout is NULL");
    auto* l = new cusimLtMatrixLayout;
    l->type = type;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    *layout = l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
}

#define CUSIM_LT_LAYOUT_FIELDS(X)                               \
    X(CUBLASLT_MATRIX_LAYOUT_TYPE, type)                        \
    X(CUBLASLT_MATRIX_LAYOUT_ORDER, order)                      \
    X(CUBLASLT_MATRIX_LAYOUT_ROWS, rows)                        \
    X(CUBLASLT_MATRIX_LAYOUT_COLS, cols)                        \
    X(CUBLASLT_MATRIX_LAYOUT_LD, ld)                            \
    X(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count)          \
    X(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, batch_stride) \
    X(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, plane_offset)

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
    const char* fn = "cublasLtMatrixLayoutSetAttribute";
    if (!layout) return invalid(fn, "matLayout is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return set_field(fn, layout->field, buf, size);
        CUSIM_LT_LAYOUT_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                                                void* buf, size_t size, size_t* written) {
    const char* fn = "cublasLtMatrixLayoutGetAttribute";
    if (!layout) return invalid(fn, "matLayout is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return get_field(fn, layout->field, buf, size, written);
        CUSIM_LT_LAYOUT_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

// ---- Preference -----------------------------------------------------------------------------------------

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
    if (!pref) return invalid("cublasLtMatmulPreferenceCreate", "pref is NULL");
    *pref = new cusimLtMatmulPreference;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    delete pref;
    return CUBLAS_STATUS_SUCCESS;
}

#define CUSIM_LT_PREF_FIELDS(X)                                          \
    X(CUBLASLT_MATMUL_PREF_SEARCH_MODE, search_mode)                     \
    X(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace)           \
    X(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction_mask)        \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a)               \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b)               \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c)               \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d)               \
    X(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, max_waves)                   \
    X(CUBLASLT_MATMUL_PREF_IMPL_MASK, impl_mask)

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t size) {
    const char* fn = "cublasLtMatmulPreferenceSetAttribute";
    if (!pref) return invalid(fn, "pref is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return set_field(fn, pref->field, buf, size);
        CUSIM_LT_PREF_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void* buf, size_t size,
                                                    size_t* written) {
    const char* fn = "cublasLtMatmulPreferenceGetAttribute";
    if (!pref) return invalid(fn, "pref is NULL");
    switch (attr) {
#define X(name, field) \
    case name: return get_field(fn, pref->field, buf, size, written);
        CUSIM_LT_PREF_FIELDS(X)
#undef X
        default: return unsupported(fn, "attribute " + std::to_string(attr) + " is not supported by cusim");
    }
}

// ---- Heuristic and matmul ---------------------------------------------------------------------------------

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* count) {
    const char* fn = "cublasLtMatmulAlgoGetHeuristic";
    if (count) *count = 0;
    if (requested < 1 || !results || !count)
        return invalid(fn, "requestedAlgoCount must be >= 1, and the result array and returnAlgoCount non-NULL");
    Plan plan;
    if (cublasStatus_t s = check_matmul(fn, handle, desc, A, B, C, D, plan)) return s;
    std::memset(&results[0], 0, sizeof results[0]);  // cusim's one algorithm: all zeros, no workspace
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t*, void*, size_t,
                              cudaStream_t stream) {
    const char* fn = "cublasLtMatmul";
    Plan plan;
    if (cublasStatus_t s = check_matmul(fn, handle, desc, Adesc, Bdesc, Cdesc, Ddesc, plan)) return s;
    if (!alpha || !beta) return invalid(fn, std::string(alpha ? "beta" : "alpha") + " is NULL");
    if (!cusim::detail::valid_stream(stream)) return invalid(fn, "the stream is not a live stream");
    const bool empty = plan.m == 0 || plan.n == 0;
    if (!empty && (!A || !B || !D)) return invalid(fn, "A, B or D is NULL");
    if ((desc->epilogue & CUBLASLT_EPILOGUE_BIAS) && !desc->bias)
        return invalid(fn, "the epilogue adds a bias but CUBLASLT_MATMUL_DESC_BIAS_POINTER is NULL");
    if (plan.precision == Precision::F64) {
        const double a = scalar<double>(alpha, plan.precision), b = scalar<double>(beta, plan.precision);
        if (b != 0.0 && !empty && !C) return invalid(fn, "C is NULL and beta != 0");
        run<double>(plan, *desc, a, b, A, *Adesc, B, *Bdesc, C, *Cdesc, D, *Ddesc);
    } else {
        const float a = scalar<float>(alpha, plan.precision), b = scalar<float>(beta, plan.precision);
        if (b != 0.0f && !empty && !C) return invalid(fn, "C is NULL and beta != 0");
        run<float>(plan, *desc, a, b, A, *Adesc, B, *Bdesc, C, *Cdesc, D, *Ddesc);
    }
    return CUBLAS_STATUS_SUCCESS;
}
