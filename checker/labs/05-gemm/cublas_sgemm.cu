// Row-major SGEMM through cuBLAS, which is column-major: a row-major M x N matrix C is the
// column-major N x M matrix C^T, and C^T = B^T A^T, so cuBLAS computes C^T from B^T and A^T
// with the operands swapped and no transposition.
#include "cublas_sgemm.h"

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace {

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                           cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

}  // namespace

#define WB_CUBLAS_CHECK(expr) check_cublas((expr), #expr, __FILE__, __LINE__)

CublasSgemm::CublasSgemm() {
  cublasHandle_t handle = nullptr;
  WB_CUBLAS_CHECK(cublasCreate(&handle));
  handle_ = handle;
  // Plain FP32 arithmetic, as the lab's kernels use (no TF32 tensor cores).
  WB_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
}

CublasSgemm::~CublasSgemm() {
  if (handle_ != nullptr) (void)cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void CublasSgemm::run(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc) {
  WB_CUBLAS_CHECK(cublasSgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, ldb,
                              A, lda, &beta, C, ldc));
}
