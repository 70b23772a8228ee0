// __launch_bounds__ on template kernels (every instantiation has its own bound, which may be a
// template parameter or a constexpr expression) and on kernels defined in an included header:
// cudaFuncGetAttributes reports the bound, and a larger block fails with cudaErrorInvalidValue
// (CUDA 13; older toolkits: cudaErrorLaunchOutOfResources).
#include <cstdio>
#include "launch_bounds_templates.cuh"

constexpr int kWarps = 2;

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) fill(int* out) { out[blockIdx.x * BLOCK + threadIdx.x] = BLOCK; }

template <class T, int ITEMS = 4>
__global__ void __launch_bounds__(kWarps * 32 * ITEMS / 4, 2) scale(T* data, T factor) {
    data[threadIdx.x] *= factor;
}

int limit(const void* kernel) {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, kernel);
    return a.maxThreadsPerBlock;
}

int main() {
    printf("fill<64>: %d, fill<256>: %d\n", limit((const void*)fill<64>), limit((const void*)fill<256>));
    printf("scale<float>: %d, scale<int, 8>: %d\n", limit((const void*)scale<float>),
           limit((const void*)scale<int, 8>));
    printf("header_kernel: %d, header_template<96>: %d\n", limit((const void*)header_kernel),
           limit((const void*)header_template<96>));

    int* out;
    float* f;
    cudaMalloc(&out, 4096 * sizeof(int));
    cudaMalloc(&f, 1024 * sizeof(float));
    fill<64><<<2, 64>>>(out);
    printf("fill<64><<<2, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<64><<<1, 128>>>(out);
    printf("fill<64><<<1, 128>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    fill<256><<<1, 128>>>(out);
    printf("fill<256><<<1, 128>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    scale<float><<<1, 64>>>(f, 2.0f);
    printf("scale<float><<<1, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    scale<float><<<1, 65>>>(f, 2.0f);
    printf("scale<float><<<1, 65>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    header_kernel<<<1, 256>>>(out);
    printf("header_kernel<<<1, 256>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    header_template<96><<<1, 96>>>(out);
    printf("header_template<96><<<1, 96>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    header_template<96><<<1, 128>>>(out);
    printf("header_template<96><<<1, 128>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    int h = 0;
    cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
    printf("out[0] = %d, then: %s\n", h, cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
