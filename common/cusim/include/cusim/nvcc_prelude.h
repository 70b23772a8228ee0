// What nvcc puts in front of every .cu file: <cuda_runtime.h> (included implicitly, so programs
// use cudaDeviceProp or cudaMalloc without an #include) and the compiler's own macros, with the
// values of the CUDA version cusim models (13.0). The source rewriter includes this header at the
// top of every rewritten .cu; plain C++ files that include <cuda_runtime.h> do not see __CUDACC__,
// as with nvcc.
//
// __CUDA_ARCH__ is not defined here: cusim compiles host and device code in one pass for the CPU;
// the rewriter gives device-only code nvcc's device-pass view of it (900) and everything else
// the host pass's, where __CUDA_ARCH__ is undefined (docs/cusim.md).
#pragma once
#include <cuda_runtime.h>

#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
