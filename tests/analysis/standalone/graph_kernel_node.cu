// A kernel node added with (void*)kernel and an argument array, as NVIDIA's graph samples do, and the
// same kernel through cudaLaunchKernel: a correct program that every analysis tool passes.
#include <cstdio>

__global__ void add_one(int* p, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}

int main() {
    const int n = 64;
    int* d = nullptr;
    cudaMalloc(&d, n * sizeof(int));
    cudaMemset(d, 0, n * sizeof(int));
    int count = n;
    void* args[2] = {&d, &count};
    cudaKernelNodeParams p = {};
    p.func = (void*)add_one;
    p.gridDim = dim3(2);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    cudaGraph_t graph;
    cudaGraphNode_t node;
    cudaGraphExec_t exec;
    cudaGraphCreate(&graph, 0);
    cudaGraphAddKernelNode(&node, graph, nullptr, 0, &p);
    cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
    cudaGraphLaunch(exec, 0);
    cudaGraphLaunch(exec, 0);
    cudaLaunchKernel((void*)add_one, dim3(2), dim3(32), args, 0, 0);
    const cudaError_t status = cudaDeviceSynchronize();
    int h[n];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += h[i] != 3;
    printf("%s: %d of %d elements are not 3\n", cudaGetErrorName(status), wrong, n);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(d);
    return wrong != 0;
}
