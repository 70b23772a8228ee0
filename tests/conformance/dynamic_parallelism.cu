// Dynamic parallelism as NVIDIA's cdpSimplePrint, cdpSimpleQuicksort and cdpBezierTessellation use
// it: kernels that launch kernels (each thread of a parent, on the default stream or on a stream it
// creates), recursion to a fixed depth, and device-side cudaMalloc and cudaFree. A child grid may
// run any time before its parent grid completes as seen from the host, so everything printed is
// read after the host synchronizes. nvcc builds it with relocatable device code (-rdc=true).
#include <cstdio>

__device__ int g_launched;

__global__ void fill(int* out, int value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

// Each thread of the parent fills its own slice of `out` through a child grid.
__global__ void parent(int* out, int slice) {
    atomicAdd(&g_launched, 1);
    int* mine = out + threadIdx.x * slice;
    if (threadIdx.x % 2 == 0) {
        fill<<<(slice + 31) / 32, 32>>>(mine, 10 + threadIdx.x, slice);
    } else {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        fill<<<(slice + 31) / 32, 32, 0, s>>>(mine, 10 + threadIdx.x, slice);
        cudaStreamDestroy(s);
    }
}

// Recursion: depth d launches two grids of depth d + 1 until max_depth; every grid counts itself.
__global__ void tree(int* count, int depth, int max_depth) {
    atomicAdd(&count[depth], 1);
    if (depth + 1 < max_depth) {
        tree<<<1, 1>>>(count, depth + 1, max_depth);
        tree<<<1, 1>>>(count, depth + 1, max_depth);
    }
}

// Device-side allocation kept across kernels, as cdpBezierTessellation keeps its vertex buffers.
struct Line {
    int n;
    int* data;
};

__global__ void allocate_lines(Line* lines) {
    Line& l = lines[threadIdx.x];
    l.n = 8 * (threadIdx.x + 1);
    cudaMalloc((void**)&l.data, l.n * sizeof(int));
    fill<<<1, 32>>>(l.data, threadIdx.x + 1, l.n);
}

__global__ void sum_lines(const Line* lines, int* sums) {
    const Line& l = lines[threadIdx.x];
    int s = 0;
    for (int i = 0; i < l.n; ++i) s += l.data[i];
    sums[threadIdx.x] = s;
}

__global__ void free_lines(Line* lines) { cudaFree(lines[threadIdx.x].data); }

int main() {
    const int threads = 4, slice = 40;
    int* out;
    cudaMalloc(&out, threads * slice * sizeof(int));
    parent<<<1, threads>>>(out, slice);
    printf("parent launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("synchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int host[threads * slice];
    cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost);
    for (int t = 0; t < threads; ++t) printf("slice %d: %d .. %d\n", t, host[t * slice], host[t * slice + slice - 1]);
    int launched = 0;
    cudaMemcpyFromSymbol(&launched, g_launched, sizeof launched);
    printf("parent threads: %d\n", launched);

    int* count;
    cudaMalloc(&count, 4 * sizeof(int));
    cudaMemset(count, 0, 4 * sizeof(int));
    tree<<<1, 1>>>(count, 0, 4);
    printf("tree: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int grids[4];
    cudaMemcpy(grids, count, sizeof grids, cudaMemcpyDeviceToHost);
    printf("grids per depth: %d %d %d %d\n", grids[0], grids[1], grids[2], grids[3]);

    Line* lines;
    int* sums;
    cudaMalloc(&lines, 3 * sizeof(Line));
    cudaMalloc(&sums, 3 * sizeof(int));
    allocate_lines<<<1, 3>>>(lines);
    sum_lines<<<1, 3>>>(lines, sums);
    free_lines<<<1, 3>>>(lines);
    printf("lines: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    int s[3];
    cudaMemcpy(s, sums, sizeof s, cudaMemcpyDeviceToHost);
    printf("line sums: %d %d %d\n", s[0], s[1], s[2]);
    cudaFree(out);
    cudaFree(count);
    cudaFree(lines);
    cudaFree(sums);
    printf("done\n");
    return 0;
}
