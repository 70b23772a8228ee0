// The SharedMemory<T> idiom of NVIDIA's reduction sample: one extern __shared__ array per type,
// reached through a template (an unsized array of T cannot be declared twice with two types).
#pragma once

template <class T>
struct SharedMemory {
    __device__ inline operator T*() {
        extern __shared__ int __smem[];
        return (T*)__smem;
    }
    __device__ inline operator const T*() const {
        extern __shared__ int __smem[];
        return (T*)__smem;
    }
};

template <>
struct SharedMemory<double> {
    __device__ inline operator double*() {
        extern __shared__ double __smem_d[];
        return (double*)__smem_d;
    }
    __device__ inline operator const double*() const {
        extern __shared__ double __smem_d[];
        return (double*)__smem_d;
    }
};

template <class T, unsigned int blockSize>
__global__ void reduce_block(const T* g_idata, T* g_odata, unsigned int n) {
    T* sdata = SharedMemory<T>();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    T sum = (i < n) ? g_idata[i] : 0;
    if (i + blockSize < n) sum += g_idata[i + blockSize];
    sdata[tid] = sum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = sum = sum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sum;
}
