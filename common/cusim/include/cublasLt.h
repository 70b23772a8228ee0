// cusim's cublasLt.h: the cuBLASLt matmul subset that fp32/bf16/fp16 programs use, on the CPU:
// handles, matmul descriptors (compute and scale type, pointer mode, transposes, epilogues
// DEFAULT/RELU/BIAS/RELU_BIAS/GELU/GELU_BIAS with a bias vector), matrix layouts (type, rows,
// cols, ld, column- or row-major order, strided batches), preferences, a heuristic that returns
// one algorithm, and cublasLtMatmul with C and D separate or the same. Names and enum values are
// cuBLASLt's. Link cusim_cublas (CMake: CUDA::cublasLt names it on the sim backend). What differs
// from a GPU: docs/cusim.md, "cuBLAS on the CPU".
#pragma once

#include <cstddef>
#include <cstdint>

#include "cublas_api.h"

struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;
struct cusimLtMatmulDesc;
typedef struct cusimLtMatmulDesc* cublasLtMatmulDesc_t;
struct cusimLtMatrixLayout;
typedef struct cusimLtMatrixLayout* cublasLtMatrixLayout_t;
struct cusimLtMatmulPreference;
typedef struct cusimLtMatmulPreference* cublasLtMatmulPreference_t;

/// An algorithm, as cublasLtMatmulAlgoGetHeuristic returns it; cusim has one, all zeros.
typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef enum {
    CUBLASLT_ORDER_COL = 0,
    CUBLASLT_ORDER_ROW = 1,
    CUBLASLT_ORDER_COL32 = 2,
    CUBLASLT_ORDER_COL4_4R2_8C = 3,
    CUBLASLT_ORDER_COL32_2R_4R4 = 4,
} cublasLtOrder_t;

typedef enum {
    CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                  // uint32_t (cudaDataType)
    CUBLASLT_MATRIX_LAYOUT_ORDER = 1,                 // int32_t (cublasLtOrder_t), default COL
    CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                  // uint64_t
    CUBLASLT_MATRIX_LAYOUT_COLS = 3,                  // uint64_t
    CUBLASLT_MATRIX_LAYOUT_LD = 4,                    // int64_t
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,           // int32_t, default 1
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,  // int64_t elements, default 0
    CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET = 7,          // int64_t (not supported: must stay 0)
} cublasLtMatrixLayoutAttribute_t;

typedef enum {
    CUBLASLT_POINTER_MODE_HOST = CUBLAS_POINTER_MODE_HOST,
    CUBLASLT_POINTER_MODE_DEVICE = CUBLAS_POINTER_MODE_DEVICE,
    CUBLASLT_POINTER_MODE_DEVICE_VECTOR = 2,
    CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO = 3,
    CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST = 4,
} cublasLtPointerMode_t;

typedef enum {
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,     // int32_t (cublasComputeType_t)
    CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,       // int32_t (cudaDataType)
    CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,     // int32_t, HOST or DEVICE
    CUBLASLT_MATMUL_DESC_TRANSA = 3,           // int32_t (cublasOperation_t)
    CUBLASLT_MATMUL_DESC_TRANSB = 4,           // int32_t
    CUBLASLT_MATMUL_DESC_TRANSC = 5,           // int32_t (N only)
    CUBLASLT_MATMUL_DESC_FILL_MODE = 6,        // int32_t (FULL only)
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,         // uint32_t (cublasLtEpilogue_t)
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,     // const void*
    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,  // int64_t elements
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13,
    CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE = 14,
    CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15,  // int32_t, accepted and ignored
    CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,       // int8_t, accepted and ignored
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,   // int32_t (cudaDataType), default: D's type
} cublasLtMatmulDescAttributes_t;

typedef enum {
    CUBLASLT_EPILOGUE_DEFAULT = 1,
    CUBLASLT_EPILOGUE_RELU = 2,
    CUBLASLT_EPILOGUE_RELU_AUX = (CUBLASLT_EPILOGUE_RELU | 128),
    CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_RELU_BIAS = (CUBLASLT_EPILOGUE_RELU | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_RELU_AUX_BIAS = (CUBLASLT_EPILOGUE_RELU_AUX | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_DRELU = 8 | 128,
    CUBLASLT_EPILOGUE_DRELU_BGRAD = CUBLASLT_EPILOGUE_DRELU | 16,
    CUBLASLT_EPILOGUE_GELU = 32,
    CUBLASLT_EPILOGUE_GELU_AUX = (CUBLASLT_EPILOGUE_GELU | 128),
    CUBLASLT_EPILOGUE_GELU_BIAS = (CUBLASLT_EPILOGUE_GELU | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_GELU_AUX_BIAS = (CUBLASLT_EPILOGUE_GELU_AUX | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_DGELU = 64 | 128,
    CUBLASLT_EPILOGUE_DGELU_BGRAD = CUBLASLT_EPILOGUE_DGELU | 16,
    CUBLASLT_EPILOGUE_BGRADA = 256,
    CUBLASLT_EPILOGUE_BGRADB = 512,
} cublasLtEpilogue_t;

typedef enum {
    CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,  // uint64_t
    CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
    CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT = 9,
    CUBLASLT_MATMUL_PREF_IMPL_MASK = 12,
} cublasLtMatmulPreferenceAttributes_t;

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle);
size_t cublasLtGetVersion(void);
size_t cublasLtGetCudartVersion(void);
cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value);
const char* cublasLtGetStatusName(cublasStatus_t status);
const char* cublasLtGetStatusString(cublasStatus_t status);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes);
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t sizeInBytes, size_t* sizeWritten);

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                size_t sizeInBytes);
cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf, size_t sizeInBytes,
                                                size_t* sizeWritten);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes);
cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten);

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount);

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream);

}  // extern "C"
