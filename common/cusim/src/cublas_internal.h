// What cusim's cuBLAS (cublas.cpp) and cuBLASLt (cublaslt.cpp) share: argument reports, the
// element types they convert between, and the mixed-precision GEMM engine over a CPU BLAS.
#pragma once

#include <cstdint>
#include <string>

#include "cublas_api.h"

namespace cusim::cublas {

/// Prints "cusim: <function>: <detail> -> <status name>" (unless CUSIM_QUIET) and returns status.
cublasStatus_t fail(cublasStatus_t status, const char* function, const std::string& detail);

/// CUBLAS_STATUS_EXECUTION_FAILED (with a report) when the context holds a sticky error, as any
/// work submitted to a GPU context after a device fault fails; else CUBLAS_STATUS_SUCCESS.
cublasStatus_t context_usable(const char* function);

/// Tells cusim's initcheck that the library wrote `cols` runs of `rows` elements, `ld` apart.
void mark_written(void* base, int64_t rows, int64_t cols, int64_t ld, size_t element_bytes);

size_t element_bytes(cudaDataType type);  // 0 when cusim's cuBLAS does not handle the type
const char* type_name(cudaDataType type);
const char* compute_name(cublasComputeType_t type);
const char* op_name(cublasOperation_t op);

/// A matrix in memory: element (r, c) is at r + c * ld (column-major) or r * ld + c (row-major).
struct Matrix {
    const void* data = nullptr;
    cudaDataType type = CUDA_R_32F;
    int64_t ld = 0;
    bool row_major = false;
    int64_t index(int64_t r, int64_t c) const { return row_major ? r * ld + c : r + c * ld; }
};

/// What runs after alpha * op(A) op(B) + beta * C (cuBLASLt's epilogues): bias[row] is added
/// (bias != nullptr), then ReLU or GELU (tanh approximation, as cuBLASLt) applies.
struct Epilogue {
    const void* bias = nullptr;
    cudaDataType bias_type = CUDA_R_32F;
    bool relu = false, gelu = false;
};

/// D = epilogue(alpha * op(A) op(B) + beta * C) for one matrix, in precision T (float or
/// double): op(A) and op(B) are converted to T, multiplied by the CPU BLAS, and the result
/// converted to D's type. C is not read when beta == 0 (it may hold NaN); C and D may be the
/// same memory. m, n, k >= 0 and every argument already validated.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const Matrix& A, const Matrix& B,
          T beta, const Matrix& C, const Matrix& D, const Epilogue& epilogue = {});

}  // namespace cusim::cublas
