// cuBLAS bf16 GEMM, timed with CUDA events: the tensor-core ceiling lab 08's check compares with.
#include "attention_baselines.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
}

__global__ void fill_bf16(__nv_bfloat16* x, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = __float2bfloat16(static_cast<float>(i % 13) / 13.0f - 0.5f);
}

}  // namespace

double cublas_bf16_gemm_tflops(int n) {
  const size_t elements = static_cast<size_t>(n) * n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t handle = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  auto release = [&] {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    if (handle) cublasDestroy(handle);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  };
  try {
    check(cudaMalloc(&a, elements * sizeof(__nv_bfloat16)), "cudaMalloc");
    check(cudaMalloc(&b, elements * sizeof(__nv_bfloat16)), "cudaMalloc");
    check(cudaMalloc(&c, elements * sizeof(__nv_bfloat16)), "cudaMalloc");
    fill_bf16<<<1024, 256>>>(a, elements);
    fill_bf16<<<1024, 256>>>(b, elements);
    check(cudaGetLastError(), "fill_bf16");
    check(cublasCreate(&handle), "cublasCreate");
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    const float alpha = 1.0f, beta = 0.0f;
    auto gemm = [&] {
      check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n,
                         &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    };
    for (int i = 0; i < 2; ++i) gemm();
    std::vector<float> ms;
    for (int i = 0; i < 7; ++i) {
      check(cudaEventRecord(start), "cudaEventRecord");
      gemm();
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float t = 0.0f;
      check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    release();
    return 2.0 * n * static_cast<double>(n) * n / (ms[ms.size() / 2] * 1e-3) / 1e12;
  } catch (...) {
    release();
    throw;
  }
}
