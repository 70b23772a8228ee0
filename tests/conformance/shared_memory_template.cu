// Template kernels with extern __shared__ through SharedMemory<T>, in a header, for int and double.
#include <cstdio>
#include <vector>
#include "shared_memory_template.cuh"

template <class T>
T reduce_on_device(const std::vector<T>& h) {
    constexpr unsigned threads = 128;
    const unsigned n = static_cast<unsigned>(h.size());
    const unsigned blocks = (n + threads * 2 - 1) / (threads * 2);
    T *din, *dout;
    cudaMalloc(&din, n * sizeof(T));
    cudaMalloc(&dout, blocks * sizeof(T));
    cudaMemcpy(din, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    reduce_block<T, threads><<<blocks, threads, threads * sizeof(T)>>>(din, dout, n);
    std::vector<T> partial(blocks);
    cudaMemcpy(partial.data(), dout, blocks * sizeof(T), cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(dout);
    T total = 0;
    for (T p : partial) total += p;
    return total;
}

int main() {
    std::vector<int> a(10000);
    std::vector<double> b(3000);
    for (int i = 0; i < 10000; ++i) a[i] = i % 100;
    for (int i = 0; i < 3000; ++i) b[i] = 0.5 * (i % 8);
    const int sa = reduce_on_device(a);
    const double sb = reduce_on_device(b);
    printf("int sum %d\ndouble sum %.1f\n", sa, sb);
    return sa == 495000 && sb == 5250.0 ? 0 : 1;
}
