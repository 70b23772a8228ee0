/// @file
/// @brief The baseline of lab 08's tensor-core performance check (cuda backend only; compiled as
/// a CUDA_BASELINES source).
#pragma once

/// TFLOP/s of cuBLAS's bf16 GEMM (bf16 A, B and C, fp32 accumulation) of n x n x n, the median of
/// 7 timed runs after 2 warm-up runs: the practical tensor-core ceiling of the GPU. Errors throw
/// std::runtime_error naming the call and its status.
double cublas_bf16_gemm_tflops(int n);
