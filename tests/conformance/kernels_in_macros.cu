// Kernels named inside macros, as helper headers write them: a launch in a macro body (the kernel,
// configuration and arguments are the macro's parameters, the arguments perhaps none), a kernel
// cast to void* in a macro body and in a macro argument, for cudaFuncGetAttributes,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor, cudaLaunchKernel and cudaLaunchCooperativeKernel.
#include <cstdio>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        cudaError_t err_ = (call);                                                             \
        if (err_ != cudaSuccess) printf("line %d: %s\n", __LINE__, cudaGetErrorName(err_));    \
    } while (0)
#define LAUNCH(kernel, grid, block, ...) kernel<<<grid, block>>>(__VA_ARGS__)
#define LAUNCH_CHECKED(kernel, grid, block, ...) \
    do {                                         \
        kernel<<<grid, block>>>(__VA_ARGS__);    \
        CHECK(cudaGetLastError());               \
    } while (0)
#define RUN_VIA_POINTER(kernel, grid, block, args) CHECK(cudaLaunchKernel((void*)kernel, grid, block, args, 0, 0))
#define MAX_THREADS(kernel, attr) CHECK(cudaFuncGetAttributes(&attr, (const void*)kernel))

__global__ void set(int* out, int v) { out[blockIdx.x * blockDim.x + threadIdx.x] = v; }
__global__ void __launch_bounds__(64) bounded(int* out) { out[threadIdx.x] = 5; }
__global__ void touch() {}
template <int N>
__global__ void set_n(int* out) { out[threadIdx.x] = N; }

int first(const int* d) {
    int h = 0;
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    return h;
}

int main() {
    int* out;
    CHECK(cudaMalloc(&out, 1024 * sizeof(int)));
    LAUNCH(set, 2, 32, out, 7);
    printf("LAUNCH(set): %d\n", first(out));
    LAUNCH(set_n<3>, 1, 32, out);
    printf("LAUNCH(set_n<3>): %d\n", first(out));
    LAUNCH(touch, 1, 1);
    LAUNCH_CHECKED(touch, 1, 1);
    printf("LAUNCH(touch): %s\n", cudaGetErrorName(cudaGetLastError()));
    LAUNCH_CHECKED(bounded, 1, 128, out);
    LAUNCH(bounded, 1, 128, out);
    printf("LAUNCH(bounded, 1, 128): %s\n", cudaGetErrorName(cudaGetLastError()));

    cudaFuncAttributes attr;
    MAX_THREADS(bounded, attr);
    printf("MAX_THREADS(bounded): %d\n", attr.maxThreadsPerBlock);
    CHECK(cudaFuncGetAttributes(&attr, (void*)set));
    printf("cudaFuncGetAttributes((void*)set): %d\n", attr.maxThreadsPerBlock);
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (void*)set, 256, 0));
    printf("occupancy of set at 256 threads: %d\n", blocks);

    int v = 11;
    void* args[] = {&out, &v};
    RUN_VIA_POINTER(set, dim3(1), dim3(32), args);
    printf("RUN_VIA_POINTER(set): %d\n", first(out));
    v = 13;
    CHECK(cudaLaunchKernel((void*)set, dim3(1), dim3(32), args, 0, 0));
    printf("cudaLaunchKernel((void*)set): %d\n", first(out));
    v = 17;
    CHECK(cudaLaunchCooperativeKernel((void*)set, dim3(2), dim3(32), args, 0, 0));
    printf("cudaLaunchCooperativeKernel((void*)set): %d\n", first(out));
    CHECK(cudaDeviceSynchronize());
    return 0;
}
