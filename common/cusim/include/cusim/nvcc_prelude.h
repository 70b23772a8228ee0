// What nvcc puts in front of every .cu file: <cuda_runtime.h> (included implicitly, so programs
// use cudaDeviceProp or cudaMalloc without an #include) and the compiler's own macros, with the
// values of the CUDA version cusim models (13.0). The source rewriter includes this header at the
// top of every rewritten .cu; plain C++ files that include <cuda_runtime.h> do not see __CUDACC__,
// as with nvcc.
//
// __CUDA_ARCH__ is not defined: nvcc compiles device code in a pass of its own where it is set,
// and host code where it is not; cusim compiles both in one pass for the CPU, where host code
// must work, so code under #ifdef __CUDA_ARCH__ takes its host path (docs/cusim.md).
#pragma once
#include <cuda_runtime.h>

#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
