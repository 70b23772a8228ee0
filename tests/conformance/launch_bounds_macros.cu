// __launch_bounds__ on kernels launched through a helper macro whose body holds the launch
// (#define LAUNCH(kernel, grid, block, ...) kernel<<<grid, block>>>(__VA_ARGS__)), where the
// launch deduces the template arguments, picks one of several overloads, or calls a kernel that is
// a friend of its argument's class: a block larger than the bound of the kernel the launch calls
// fails with cudaErrorInvalidValue (CUDA 13), as when the kernel is launched directly.
#include <cstdio>

#define LAUNCH(kernel, grid, block, ...) kernel<<<grid, block>>>(__VA_ARGS__)
#define LAUNCH_REPORTED(what, kernel, grid, block, ...)                          \
    do {                                                                         \
        kernel<<<grid, block>>>(__VA_ARGS__);                                    \
        printf("%s: %s\n", what, cudaGetErrorName(cudaGetLastError()));          \
    } while (0)

template <class T>
__global__ void __launch_bounds__(sizeof(T) * 16) add(T* data, T value) { data[threadIdx.x] += value; }

__global__ void __launch_bounds__(32) twice(int* data) { data[threadIdx.x] *= 2; }
__global__ void twice(float* data) { data[threadIdx.x] *= 2.0f; }

namespace ops {
template <class T>
__global__ void __launch_bounds__(32) negate(T* data) { data[threadIdx.x] = -data[threadIdx.x]; }
}

class Slots {
  public:
    explicit Slots(int* data) : data_(data) {}
    friend __global__ void __launch_bounds__(32) clear(Slots s);

  private:
    int* data_;
};

__global__ void __launch_bounds__(32) clear(Slots s) { s.data_[threadIdx.x] = 0; }

int main() {
    int* i;
    float* f;
    double* d;
    cudaMalloc(&i, 128 * sizeof(int));
    cudaMalloc(&f, 128 * sizeof(float));
    cudaMalloc(&d, 128 * sizeof(double));
    cudaMemset(i, 0, 128 * sizeof(int));
    cudaMemset(f, 0, 128 * sizeof(float));
    cudaMemset(d, 0, 128 * sizeof(double));

    LAUNCH(add, 1, 64, i, 5);
    printf("LAUNCH(add, 1, 64, int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    LAUNCH(add, 1, 128, i, 5);
    printf("LAUNCH(add, 1, 128, int*): %s\n", cudaGetErrorName(cudaGetLastError()));
    LAUNCH(add, 1, 128, d, 0.5);
    printf("LAUNCH(add, 1, 128, double*): %s\n", cudaGetErrorName(cudaGetLastError()));
    LAUNCH_REPORTED("LAUNCH_REPORTED(add, 1, 96, float*)", add, 1, 96, f, 1.5f);
    LAUNCH_REPORTED("LAUNCH_REPORTED(add, 1, 64, float*)", add, 1, 64, f, 1.5f);
    LAUNCH_REPORTED("LAUNCH_REPORTED(twice, 1, 64, int*)", twice, 1, 64, i);
    LAUNCH_REPORTED("LAUNCH_REPORTED(twice, 1, 64, float*)", twice, 1, 64, f);
    LAUNCH_REPORTED("LAUNCH_REPORTED(ops::negate, 1, 64, int*)", ops::negate, 1, 64, i);
    LAUNCH_REPORTED("LAUNCH_REPORTED(ops::negate, 1, 32, int*)", ops::negate, 1, 32, i);
    Slots s(i);
    LAUNCH_REPORTED("LAUNCH_REPORTED(clear, 1, 64, Slots)", clear, 1, 64, s);
    LAUNCH_REPORTED("LAUNCH_REPORTED(clear, 1, 32, Slots)", clear, 1, 32, s);

    int hi[128];
    float hf;
    double hd;
    cudaMemcpy(hi, i, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hf, f, sizeof hf, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hd, d, sizeof hd, cudaMemcpyDeviceToHost);
    printf("i[0] = %d, i[31] = %d, i[40] = %d, i[64] = %d, f[0] = %g, d[0] = %g, then: %s\n",
           hi[0], hi[31], hi[40], hi[64], hf, hd, cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
