// A cooperative launch (cudaLaunchCooperativeKernel) of one block: this_grid(), grid.sync() and
// the grid group's ranks. (cusim supports grid.sync() for a grid of one block; docs/cusim.md.)
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void two_phase(int* data, int* result, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) data[i] = i * 2;
    grid.sync();
    if (grid.thread_rank() == 0) {
        int s = 0;
        for (int i = 0; i < n; ++i) s += data[i];
        *result = s;
    }
}

int main() {
    int dev = 0, supported = 0;
    cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, dev);
    printf("cooperative launch supported: %s\n", supported ? "yes" : "no");
    int n = 1000;
    int *data, *result;
    cudaMalloc(&data, n * sizeof(int));
    cudaMalloc(&result, sizeof(int));
    void* args[] = {&data, &result, &n};
    cudaError_t err = cudaLaunchCooperativeKernel(two_phase, dim3(1), dim3(256), args, 0, 0);
    printf("launch: %s\n", cudaGetErrorName(err));
    int h = 0;
    cudaMemcpy(&h, result, sizeof h, cudaMemcpyDeviceToHost);
    printf("sum %d\n", h);
    return h == 999000 ? 0 : 1;
}
