// Launch syntax as real code writes it: template kernels with explicit and deduced arguments,
// overloaded kernels, kernels in namespaces, a launch spread over several lines, and a kernel
// called through a function pointer.
#include <cstdio>

namespace kernels {
template <typename T, int Factor>
__global__ void scale(T* v, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= Factor;
}
}  // namespace kernels

__global__ void set(int* v, int value) { v[threadIdx.x] = value; }
__global__ void set(float* v, float value) { v[threadIdx.x] = value; }

template <typename T>
__global__ void add(T* v, T delta) { v[threadIdx.x] += delta; }

int main() {
    int* di;
    float* df;
    cudaMalloc(&di, 4 * sizeof(int));
    cudaMalloc(&df, 4 * sizeof(float));
    set<<<1, 4>>>(di, 5);
    set<<<1, 4>>>(df, 1.5f);
    kernels::scale<int, 3><<<1, 4>>>(di, 4);
    kernels::scale<float, 2>
        <<<dim3(1),
           dim3(4)>>>(df,
                      4);
    add<<<1, 4>>>(di, 1);            // T deduced as int
    add<float><<<1, 4>>>(df, 0.25);  // double argument converted to the float parameter
    void (*fp)(int*, int) = set;
    fp<<<1, 2>>>(di, -1);
    int hi[4];
    float hf[4];
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(hf, df, sizeof hf, cudaMemcpyDeviceToHost);
    printf("%d %d %d %d | %.2f %.2f %.2f %.2f\n", hi[0], hi[1], hi[2], hi[3], hf[0], hf[1], hf[2], hf[3]);
    return hi[3] == 16 ? 0 : 1;
}
