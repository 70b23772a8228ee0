// cusim's cublas.h: CUDA's legacy cuBLAS API (no handle, cublasInit/cublasAlloc) is not provided.
#pragma once
#error "cusim provides the cuBLAS API of <cublas_v2.h> (cublasCreate, cublasSgemm(handle, ...)), not the legacy API of <cublas.h>: include <cublas_v2.h> instead (docs/cusim.md, 'cuBLAS on the CPU')."
