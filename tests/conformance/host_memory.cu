// Pinned and mapped host memory as NVIDIA's samples use it (simpleZeroCopy, simpleStreams,
// simpleMultiCopy, UnifiedMemoryPerf): cudaSetDeviceFlags(cudaDeviceMapHost), cudaHostAlloc with
// cudaHostAllocMapped and its device pointer, cudaHostRegister of ordinary memory, cudaMallocHost
// through the templates of cuda_runtime.h, stream-ordered allocation, and the occupancy calculator's
// block size; what is printed holds on any CUDA 13 GPU with unified addressing.
#include <cstdio>
#include <cstdlib>

__global__ void add_one(int* data, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += 1;
}

#define REPORT(what, call) printf("%s: %s\n", what, cudaGetErrorName(call))

int main() {
    const int n = 1000;
    REPORT("cudaSetDeviceFlags(cudaDeviceMapHost)", cudaSetDeviceFlags(cudaDeviceMapHost));

    int* mapped = nullptr;
    REPORT("cudaHostAlloc(mapped)", cudaHostAlloc(&mapped, n * sizeof(int), cudaHostAllocMapped));
    for (int i = 0; i < n; ++i) mapped[i] = i;
    int* mapped_on_device = nullptr;
    REPORT("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&mapped_on_device, mapped, 0));
    add_one<<<(n + 127) / 128, 128>>>(mapped_on_device, n);
    REPORT("kernel on mapped memory", cudaDeviceSynchronize());
    printf("mapped[0] = %d, mapped[999] = %d\n", mapped[0], mapped[n - 1]);
    REPORT("cudaFreeHost", cudaFreeHost(mapped));

    int* plain = static_cast<int*>(malloc(n * sizeof(int)));
    for (int i = 0; i < n; ++i) plain[i] = 2 * i;
    REPORT("cudaHostRegister(mapped)", cudaHostRegister(plain, n * sizeof(int), cudaHostRegisterMapped));
    int* registered_on_device = nullptr;
    REPORT("cudaHostGetDevicePointer(registered)", cudaHostGetDevicePointer(&registered_on_device, plain, 0));
    add_one<<<(n + 127) / 128, 128>>>(registered_on_device, n);
    REPORT("kernel on registered memory", cudaDeviceSynchronize());
    printf("plain[0] = %d, plain[999] = %d\n", plain[0], plain[n - 1]);
    REPORT("cudaHostUnregister", cudaHostUnregister(plain));
    REPORT("cudaHostUnregister again", cudaHostUnregister(plain));
    (void)cudaGetLastError();
    free(plain);

    int* pinned = nullptr;
    REPORT("cudaMallocHost(int**, bytes, flags)", cudaMallocHost(&pinned, n * sizeof(int), cudaHostAllocDefault));
    int* device = nullptr;
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    REPORT("cudaMallocAsync", cudaMallocAsync(&device, n * sizeof(int), stream));
    cudaMemsetAsync(device, 0, n * sizeof(int), stream);
    add_one<<<(n + 127) / 128, 128, 0, stream>>>(device, n);
    cudaMemcpyAsync(pinned, device, n * sizeof(int), cudaMemcpyDeviceToHost, stream);
    REPORT("cudaFreeAsync", cudaFreeAsync(device, stream));
    REPORT("cudaStreamSynchronize", cudaStreamSynchronize(stream));
    printf("pinned[0] = %d, pinned[999] = %d\n", pinned[0], pinned[n - 1]);
    cudaFreeHost(pinned);
    cudaStreamDestroy(stream);

    int min_grid = 0, block = 0, sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    REPORT("cudaOccupancyMaxPotentialBlockSize", cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, add_one));
    printf("block size a multiple of 32 in [32, 1024]: %s; grid a multiple of the SM count: %s\n",
           block >= 32 && block <= 1024 && block % 32 == 0 ? "yes" : "no",
           min_grid > 0 && min_grid % sms == 0 ? "yes" : "no");
    REPORT("cudaOccupancyMaxPotentialBlockSize(limit 64)",
           cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, add_one, 0, 64));
    printf("block size with a limit of 64: %d\n", block);
    return 0;
}
