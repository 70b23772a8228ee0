// __launch_bounds__ on kernels that templates do not name the usual way: an explicit
// specialization of a kernel template (template <> __global__ void k<float>(...)) is a kernel of
// its own, with its own bound or, where it writes none, the primary template's, which a launch reaches with the template arguments written
// out or deduced; and a kernel template whose template parameter is a pointer to a device
// function (template <int (*F)(int)>), named or not.
#include <cstdio>

template <class T>
__global__ void __launch_bounds__(64) widen(T* data) { data[threadIdx.x] += T(1); }

// Its own, smaller bound.
template <>
__global__ void __launch_bounds__(32) widen<float>(float* data) { data[threadIdx.x] += 10.0f; }

// No bound written: nvcc gives it the primary template's __launch_bounds__(64) (an H100 with
// CUDA 13.0 answered so on 2026-11-28); the template arguments deduced.
template <>
__global__ void widen(double* data) { data[threadIdx.x] += 100.0; }

__device__ int twice(int x) { return 2 * x; }
__device__ int square(int x) { return x * x; }

template <int (*F)(int)>
__global__ void __launch_bounds__(32) apply(int* data) { data[threadIdx.x] = F(data[threadIdx.x]); }

// The parameter unnamed: the bound comes from the second one.
template <int (*)(int), int N>
__global__ void __launch_bounds__(N) mark(int* data) { data[threadIdx.x] += N; }

#define REPORT(what) printf("%s: %s\n", what, cudaGetErrorName(cudaGetLastError()))

int main() {
    int* i;
    float* f;
    double* d;
    cudaMalloc(&i, 256 * sizeof(int));
    cudaMalloc(&f, 256 * sizeof(float));
    cudaMalloc(&d, 256 * sizeof(double));
    cudaMemset(i, 0, 256 * sizeof(int));
    cudaMemset(f, 0, 256 * sizeof(float));
    cudaMemset(d, 0, 256 * sizeof(double));

    widen<<<1, 64>>>(i);
    REPORT("widen<<<1, 64>>>(int*)");
    widen<<<1, 128>>>(i);
    REPORT("widen<<<1, 128>>>(int*)");
    widen<float><<<1, 64>>>(f);
    REPORT("widen<float><<<1, 64>>>(float*)");
    widen<<<1, 64>>>(f);
    REPORT("widen<<<1, 64>>>(float*)");
    widen<<<1, 32>>>(f);
    REPORT("widen<<<1, 32>>>(float*)");
    widen<<<1, 256>>>(d);
    REPORT("widen<<<1, 256>>>(double*)");
    widen<double><<<1, 256>>>(d);
    REPORT("widen<double><<<1, 256>>>(double*)");

    cudaFuncAttributes attributes;
    cudaFuncGetAttributes(&attributes, widen<int>);
    printf("widen<int>: maxThreadsPerBlock %d\n", attributes.maxThreadsPerBlock);
    cudaFuncGetAttributes(&attributes, widen<float>);
    printf("widen<float>: maxThreadsPerBlock %d\n", attributes.maxThreadsPerBlock);
    cudaFuncGetAttributes(&attributes, widen<double>);
    printf("widen<double>: maxThreadsPerBlock %d\n", attributes.maxThreadsPerBlock);

    int start[64];
    for (int k = 0; k < 64; ++k) start[k] = k;
    cudaMemcpy(i + 64, start, sizeof start, cudaMemcpyHostToDevice);
    apply<twice><<<1, 32>>>(i + 64);
    REPORT("apply<twice><<<1, 32>>>");
    apply<square><<<1, 64>>>(i + 64);
    REPORT("apply<square><<<1, 64>>>");
    apply<square><<<1, 32>>>(i + 64);
    REPORT("apply<square><<<1, 32>>>");
    mark<twice, 32><<<1, 64>>>(i + 128);
    REPORT("mark<twice, 32><<<1, 64>>>");
    mark<square, 64><<<1, 64>>>(i + 128);
    REPORT("mark<square, 64><<<1, 64>>>");
    cudaFuncGetAttributes(&attributes, mark<twice, 32>);
    printf("mark<twice, 32>: maxThreadsPerBlock %d\n", attributes.maxThreadsPerBlock);

    int hi[256];
    float hf[2];
    double hd;
    cudaMemcpy(hi, i, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(hf, f, sizeof hf, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hd, d, sizeof hd, cudaMemcpyDeviceToHost);
    printf("i[0] = %d, i[64 + 3] = %d, i[64 + 40] = %d, i[128] = %d, f[0] = %g, d[0] = %g, then: %s\n",
           hi[0], hi[67], hi[104], hi[128], hf[0], hd, cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
