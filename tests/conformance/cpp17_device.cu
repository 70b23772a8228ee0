// C++17 in device code: if constexpr, fold expressions, structured bindings, constexpr
// functions, class template argument deduction, std::array-free aggregates, inline variables.
#include <cstdio>
#include <type_traits>

inline constexpr int kScale = 3;

template <class... T>
__device__ constexpr auto sum_all(T... v) { return (v + ... + 0); }

struct Pair {
    int first;
    float second;
};

template <class T>
struct Box {
    T value;
    __device__ Box(T v) : value(v) {}
};

template <class T>
__device__ T describe(T v) {
    if constexpr (std::is_integral_v<T>) return v * kScale;
    else return v / 2;
}

__global__ void modern(int* iout, float* fout) {
    const Pair p{static_cast<int>(threadIdx.x), 1.5f * threadIdx.x};
    auto [i, f] = p;
    Box b(i);  // CTAD: Box<int>
    iout[threadIdx.x] = describe(b.value) + sum_all(1, 2, 3, i);
    fout[threadIdx.x] = describe(f);
}

int main() {
    int* di;
    float* df;
    cudaMalloc(&di, 4 * sizeof(int));
    cudaMalloc(&df, 4 * sizeof(float));
    modern<<<1, 4>>>(di, df);
    int hi[4];
    float hf[4];
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(hf, df, sizeof hf, cudaMemcpyDeviceToHost);
    for (int k = 0; k < 4; ++k) printf("%d %.2f\n", hi[k], hf[k]);
    return hi[3] == 9 + 9 ? 0 : 1;
}
