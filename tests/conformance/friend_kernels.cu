// Kernels declared as friends of a class: defined in the class (a "hidden friend", found by
// argument-dependent lookup at the launch), in a class template, and declared in the class but
// defined outside it, and one with a bound defined in a class template, each instantiation its own
// kernel with the bound of its template arguments. __launch_bounds__ on them limits the block size
// as on any kernel.
#include <cstdio>

struct Accum {
    int* data;
    friend __global__ void __launch_bounds__(32) bump(Accum a) { a.data[threadIdx.x] += 1; }
};

template <class T>
struct Box {
    T* data;
    friend __global__ void bump_box(Box b) { b.data[threadIdx.x] += 2; }
};

template <class T, int BLOCK>
struct Tile {
    T* data;
    friend __global__ void __launch_bounds__(BLOCK) fill_tile(Tile t, T value) { t.data[threadIdx.x] += value; }
};

class Counter {
  public:
    explicit Counter(int* data) : data_(data) {}
    friend __global__ void __launch_bounds__(64) count(Counter c);

  private:
    int* data_;
};

__global__ void __launch_bounds__(64) count(Counter c) { atomicAdd(c.data_, 1); }

int main() {
    int* d;
    cudaMalloc(&d, 64 * sizeof(int));
    cudaMemset(d, 0, 64 * sizeof(int));
    Accum a{d};
    bump<<<1, 32>>>(a);
    printf("bump<<<1, 32>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    bump<<<1, 64>>>(a);
    printf("bump<<<1, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    Box<int> b{d};
    bump_box<<<1, 64>>>(b);
    printf("bump_box<<<1, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    Tile<int, 32> small{d + 8};
    fill_tile<<<1, 32>>>(small, 10);
    printf("fill_tile<<<1, 32>>>(Tile<int, 32>): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill_tile<<<1, 48>>>(small, 10);
    printf("fill_tile<<<1, 48>>>(Tile<int, 32>): %s\n", cudaGetErrorName(cudaGetLastError()));
    Tile<int, 64> large{d};
    fill_tile<<<1, 48>>>(large, 100);
    printf("fill_tile<<<1, 48>>>(Tile<int, 64>): %s\n", cudaGetErrorName(cudaGetLastError()));
    Counter c(d + 63);
    count<<<2, 64>>>(c);
    printf("count<<<2, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    count<<<1, 128>>>(c);
    printf("count<<<1, 128>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    int h[64];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("d[0] = %d, d[8] = %d, d[40] = %d, d[63] = %d, then: %s\n", h[0], h[8], h[40], h[63],
           cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
