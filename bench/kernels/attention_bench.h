/// @file
/// @brief bench_kernels' lab 08 group: the attention_forward_bf16 candidates (attention_candidates.h)
/// validated by the rule of lab 08's checks, then timed beside a cuBLAS bf16 GEMM of 4096^3 as
/// Performance.TensorCoreForward times them (see attention_bench.cpp).
#pragma once

namespace attention_bench {

struct Options {
  int rounds = 3;
  bool validate_only = false;
  bool with_known_wrong = false;  ///< add a candidate that skips the last key, which must be rejected
};

/// Validates every candidate; when all are right and !validate_only, times them. Prints its
/// results; returns 0 when every candidate is right, else 1. CUDA errors throw.
int run(const Options& options);

}  // namespace attention_bench
