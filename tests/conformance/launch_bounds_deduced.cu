// __launch_bounds__ on kernels whose launch deduces the template arguments (k<<<g, b>>>(p) for a
// template k) or picks one of several overloads: the launch calls one instantiation, and a block
// larger than that instantiation's bound fails with cudaErrorInvalidValue (CUDA 13; older toolkits: cudaErrorLaunchOutOfResources), as when the
// template arguments are written out. Also a kernel declared in a namespace and defined after the
// launch, template arguments partly explicit, a default argument, a launch inside a function
// template, a kernel template from the program's header, and (explicit) a template kernel with an
// unnamed template parameter.
#include <cstdio>
#include "launch_bounds_deduced.cuh"

template <class T>
__global__ void __launch_bounds__(64) scale(T* data, T factor) { data[threadIdx.x] *= factor; }

// The bound depends on the deduced type: 32 threads for char, 256 for double.
template <class T>
__global__ void __launch_bounds__(sizeof(T) * 32) fill(T* data) { data[threadIdx.x] = T(7); }

// Two kernels of one name, only one of them bounded.
__global__ void __launch_bounds__(32) twice(int* data) { data[threadIdx.x] *= 2; }
__global__ void twice(float* data) { data[threadIdx.x] *= 2.0f; }

template <int N, class T>
__global__ void __launch_bounds__(N) first(T* data) { data[threadIdx.x] = T(N); }

template <class T>
__global__ void __launch_bounds__(32) with_default(T* data, int add = 1) { data[threadIdx.x] += add; }

namespace ops {
template <class T>
__global__ void __launch_bounds__(32) negate(T* data);
}

// A template parameter without a name (a tag type).
struct Tag {};
template <class, int N>
__global__ void __launch_bounds__(N) tagged(int* data) { data[threadIdx.x] += 1000; }

template <class T>
cudaError_t scale_all(T* data, int threads) {
    scale<<<1, threads>>>(data, T(3));
    return cudaGetLastError();
}

int main() {
    int* i;
    float* f;
    char* c;
    double* d;
    cudaMalloc(&i, 256 * sizeof(int));
    cudaMalloc(&f, 256 * sizeof(float));
    cudaMalloc(&c, 256);
    cudaMalloc(&d, 256 * sizeof(double));
    cudaMemset(i, 0, 256 * sizeof(int));
    cudaMemset(f, 0, 256 * sizeof(float));

    fill<<<1, 128>>>(f);
    printf("fill<<<1, 128>>>(float*): %s\n", cudaGetErrorName(cudaGetLastError()));
    scale<<<1, 64>>>(f, 2.0f);
    printf("scale<<<1, 64>>>(float*, float): %s\n", cudaGetErrorName(cudaGetLastError()));
    scale<<<1, 128>>>(f, 2.0f);
    printf("scale<<<1, 128>>>(float*, float): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<<<1, 64>>>(c);
    printf("fill<<<1, 64>>>(char*): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<<<1, 64>>>(d);
    printf("fill<<<1, 64>>>(double*): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<<<1, 256>>>(d);
    printf("fill<<<1, 256>>>(double*): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<<<1, 32>>>(i);
    printf("fill<<<1, 32>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    twice<<<1, 64>>>(i);
    printf("twice<<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    twice<<<1, 64>>>(f);
    printf("twice<<<1, 64>>>(float*): %s\n", cudaGetErrorName(cudaGetLastError()));
    first<32><<<1, 64>>>(i);
    printf("first<32><<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    first<64><<<1, 64>>>(i + 64);
    printf("first<64><<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    with_default<<<1, 64>>>(i);
    printf("with_default<<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    with_default<<<1, 32>>>(i, 10);
    printf("with_default<<<1, 32>>>(int*, int): %s\n", cudaGetErrorName(cudaGetLastError()));
    ops::negate<<<1, 64>>>(i);
    printf("ops::negate<<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    ops::negate<<<1, 32>>>(i);
    printf("ops::negate<<<1, 32>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("scale_all(float*, 64): %s\n", cudaGetErrorName(scale_all(f, 64)));
    printf("scale_all(int*, 65): %s\n", cudaGetErrorName(scale_all(i, 65)));
    tagged<Tag, 32><<<1, 64>>>(i);
    printf("tagged<Tag, 32><<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    tagged<Tag, 64><<<1, 64>>>(i + 128);
    printf("tagged<Tag, 64><<<1, 64>>>(int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaFuncAttributes attributes;
    cudaFuncGetAttributes(&attributes, tagged<Tag, 32>);
    printf("tagged<Tag, 32>: maxThreadsPerBlock %d\n", attributes.maxThreadsPerBlock);
    header_add<<<1, 96>>>(i, 100);
    printf("header_add<<<1, 96>>>(int*, int): %s\n", cudaGetErrorName(cudaGetLastError()));
    header_add<<<1, 128>>>(i, 100);
    printf("header_add<<<1, 128>>>(int*, int): %s\n", cudaGetErrorName(cudaGetLastError()));

    int hi[65];
    float hf;
    double hd;
    cudaMemcpy(hi, i, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hf, f, sizeof hf, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hd, d, sizeof hd, cudaMemcpyDeviceToHost);
    printf("i[0] = %d, i[64] = %d, f[0] = %g, d[0] = %g, then: %s\n", hi[0], hi[64], hf, hd,
           cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}

namespace ops {
template <class T>
__global__ void __launch_bounds__(32) negate(T* data) { data[threadIdx.x] = -data[threadIdx.x]; }
}
