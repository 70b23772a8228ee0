// grid.sync() needs a cooperative launch. A kernel that may be launched either way asks
// grid.is_valid() first (false under <<<...>>>, true under cudaLaunchCooperativeKernel) and
// synchronizes the grid only when it may; otherwise the host launches the second step itself.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void scale_then_sum(float* x, int n, float* total, int* used_grid_sync) {
    cg::grid_group grid = cg::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) x[i] *= 2.0f;
    if (!grid.is_valid()) return;  // not cooperative: the host launches sum() next
    grid.sync();
    if (grid.thread_rank() == 0) {
        float s = 0;
        for (int i = 0; i < n; ++i) s += x[i];
        *total = s;
        *used_grid_sync = 1;
    }
}

__global__ void sum(const float* x, int n, float* total) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += x[i];
    *total = s;
}

int main() {
    const int n = 1000;
    float h[n];
    for (int i = 0; i < n; ++i) h[i] = float(i);
    float *x, *total;
    int* used;
    cudaMalloc(&x, sizeof h);
    cudaMalloc(&total, sizeof(float));
    cudaMalloc(&used, sizeof(int));

    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(used, 0, sizeof(int));
    scale_then_sum<<<4, 64>>>(x, n, total, used);
    sum<<<1, 1>>>(x, n, total);
    float t = 0;
    int u = -1;
    cudaMemcpy(&t, total, sizeof t, cudaMemcpyDeviceToHost);
    cudaMemcpy(&u, used, sizeof u, cudaMemcpyDeviceToHost);
    printf("<<<4, 64>>>: grid.sync used %s, total %.0f, %s\n", u ? "yes" : "no", t,
           cudaGetErrorName(cudaGetLastError()));

    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(used, 0, sizeof(int));
    int nn = n;
    void* args[] = {&x, &nn, &total, &used};
    cudaError_t err = cudaLaunchCooperativeKernel((void*)scale_then_sum, dim3(4), dim3(64), args, 0, 0);
    cudaMemcpy(&t, total, sizeof t, cudaMemcpyDeviceToHost);
    cudaMemcpy(&u, used, sizeof u, cudaMemcpyDeviceToHost);
    printf("cooperative: %s, grid.sync used %s, total %.0f\n", cudaGetErrorName(err), u ? "yes" : "no", t);
    return 0;
}
