// 64-bit and floating-point atomics: unsigned long long add, a 64-bit atomicCAS loop (atomic max
// of a double, the classic pattern), float and double atomicAdd on integer-valued data (exact in
// any order), and __half2 atomicAdd.
#include <cstdio>
#include <cuda_fp16.h>

__device__ double atomicMaxDouble(double* address, double val) {
    unsigned long long* p = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *p, assumed;
    do {
        assumed = old;
        if (__longlong_as_double(assumed) >= val) break;
        old = atomicCAS(p, assumed, __double_as_longlong(val));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__global__ void wide(unsigned long long* u64, double* dmax, float* fsum, double* dsum, __half2* h2) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;  // 0..2047
    atomicAdd(u64, 1ull << 32);
    atomicMaxDouble(dmax, 0.5 * ((t * 73) % 2048));
    atomicAdd(fsum, float(t % 16));
    atomicAdd(dsum, double(t) * 1024.0);
    atomicAdd(h2, __halves2half2(__float2half(1.0f), __float2half(t % 2 ? 0.5f : 0.0f)));
}

int main() {
    unsigned long long* u64;
    double *dmax, *dsum;
    float* fsum;
    __half2* h2;
    cudaMalloc(&u64, 8);
    cudaMalloc(&dmax, 8);
    cudaMalloc(&dsum, 8);
    cudaMalloc(&fsum, 4);
    cudaMalloc(&h2, 4);
    cudaMemset(u64, 0, 8);
    cudaMemset(dmax, 0, 8);
    cudaMemset(dsum, 0, 8);
    cudaMemset(fsum, 0, 4);
    cudaMemset(h2, 0, 4);
    wide<<<8, 256>>>(u64, dmax, fsum, dsum, h2);
    unsigned long long hu;
    double hmax, hsum;
    float hf;
    __half2 hh;
    cudaMemcpy(&hu, u64, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hmax, dmax, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hsum, dsum, 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hf, fsum, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hh, h2, 4, cudaMemcpyDeviceToHost);
    printf("u64 %llu\ndouble max %.1f\nfloat sum %.1f\ndouble sum %.1f\n", hu, hmax, hf, hsum);
    printf("half2 sum %.1f %.1f\n", __half2float(__low2half(hh)), __half2float(__high2half(hh)));
    return hu == (2048ull << 32) ? 0 : 1;
}
