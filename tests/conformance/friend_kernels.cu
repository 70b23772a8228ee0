// Kernels that are friends of a class, so they can read its private members: declared as friends
// in the class and defined after it, as CUDA requires (nvcc refuses a kernel defined in a friend
// declaration: tests/conformance/refused_friend_kernel.cu). A plain class; a class template whose
// friend is the kernel template's specialization for the same T; a class template whose friend
// has a bound that is a template parameter, each instantiation its own kernel with its own bound.
// __launch_bounds__ on them limits the block size as on any kernel.
#include <cstdio>

class Accum {
  public:
    explicit Accum(int* data) : data_(data) {}
    friend __global__ void __launch_bounds__(32) bump(Accum a);

  private:
    int* data_;
};

__global__ void __launch_bounds__(32) bump(Accum a) { a.data_[threadIdx.x] += 1; }

template <class T>
class Box;
template <class T>
__global__ void bump_box(Box<T> b);

template <class T>
class Box {
  public:
    explicit Box(T* data) : data_(data) {}
    friend __global__ void bump_box<T>(Box<T> b);

  private:
    T* data_;
};

template <class T>
__global__ void bump_box(Box<T> b) { b.data_[threadIdx.x] += 2; }

template <class T, int BLOCK>
class Tile;
template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) fill_tile(Tile<T, BLOCK> t, T value);

template <class T, int BLOCK>
class Tile {
  public:
    explicit Tile(T* data) : data_(data) {}
    friend __global__ void fill_tile<T, BLOCK>(Tile<T, BLOCK> t, T value);

  private:
    T* data_;
};

template <class T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) fill_tile(Tile<T, BLOCK> t, T value) { t.data_[threadIdx.x] += value; }

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
    Accum a(d);
    bump<<<1, 32>>>(a);
    printf("bump<<<1, 32>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    bump<<<1, 64>>>(a);
    printf("bump<<<1, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    Box<int> b(d);
    bump_box<<<1, 64>>>(b);
    printf("bump_box<<<1, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    Tile<int, 32> small(d + 8);
    fill_tile<<<1, 32>>>(small, 10);
    printf("fill_tile<<<1, 32>>>(Tile<int, 32>): %s\n", cudaGetErrorName(cudaGetLastError()));
    fill_tile<<<1, 48>>>(small, 10);
    printf("fill_tile<<<1, 48>>>(Tile<int, 32>): %s\n", cudaGetErrorName(cudaGetLastError()));
    Tile<int, 64> large(d);
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
