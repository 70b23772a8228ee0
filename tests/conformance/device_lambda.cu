// Lambdas in device code, a functor template parameter of a kernel, and a kernel template that
// takes the operation as a type (the pattern of thrust-like code without thrust).
#include <cstdio>

struct Square {
    __device__ float operator()(float x) const { return x * x; }
};

template <class Op>
__global__ void transform(const float* in, float* out, int n, Op op) {
    auto index = []() { return blockIdx.x * blockDim.x + threadIdx.x; };
    const unsigned i = index();
    if (i < n) out[i] = op(in[i]);
}

__global__ void lambda_inside(int* out) {
    int base = 10;
    auto add_base = [base](int v) { return v + base; };
    auto twice = [&](int v) { return add_base(add_base(v)); };
    out[threadIdx.x] = twice(static_cast<int>(threadIdx.x));
}

int main() {
    const int n = 8;
    float h[n], r[n];
    for (int i = 0; i < n; ++i) h[i] = float(i) - 3.0f;
    float *d, *o;
    int* di;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof r);
    cudaMalloc(&di, n * sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    transform<<<1, 32>>>(d, o, n, Square());
    cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) printf("%.0f%s", r[i], i < n - 1 ? " " : "\n");
    lambda_inside<<<1, n>>>(di);
    int hi[n];
    cudaMemcpy(hi, di, sizeof hi, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) printf("%d%s", hi[i], i < n - 1 ? " " : "\n");
    return hi[7] == 27 ? 0 : 1;
}
