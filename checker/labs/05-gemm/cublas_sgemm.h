/// @file
/// @brief The baseline of lab 05's GPU performance check: row-major SGEMM through cuBLAS
/// (cuda backend only; compiled as a CUDA_BASELINES source).
#pragma once

/// A cuBLAS handle and row-major SGEMM, C = alpha * A * B + beta * C (the arguments of the lab's
/// functions). Errors throw std::runtime_error naming the call, file:line and cuBLAS's status.
class CublasSgemm {
 public:
  CublasSgemm();
  ~CublasSgemm();
  CublasSgemm(const CublasSgemm&) = delete;
  CublasSgemm& operator=(const CublasSgemm&) = delete;

  void run(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
           int ldc);

 private:
  void* handle_ = nullptr;
};
