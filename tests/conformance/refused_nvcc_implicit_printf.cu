// printf without #include <cstdio>: nvcc's implicit cuda_runtime.h does not declare it, so nvcc
// refuses the program, and cusim, whose implicit headers are nvcc's, refuses it the same way.
// nvcc: identifier "printf" is undefined
// cusim: 'printf' was not declared in this scope
__global__ void square(int* v) { v[threadIdx.x] = static_cast<int>(threadIdx.x * threadIdx.x); }

int main() {
    int* d = nullptr;
    cudaMalloc(&d, 8 * sizeof(int));
    square<<<1, 8>>>(d);
    printf("launched: %s\n", cudaGetErrorName(cudaGetLastError()));
    return 0;
}
