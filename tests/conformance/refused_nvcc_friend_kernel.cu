// A kernel defined in a friend declaration (a "hidden friend"): CUDA forbids it, so nvcc refuses
// the program and cusim refuses it too, with one line naming the rule. A kernel declared as a friend
// in the class and defined after it is valid CUDA (friend_kernels.cu).
// nvcc: A __global__ function or function template cannot be defined in a friend declaration
// cusim: A __global__ function or function template cannot be defined in a friend declaration
#include <cstdio>

struct Accum {
    int* data;
    friend __global__ void bump(Accum a) { a.data[threadIdx.x] += 1; }
};

int main() {
    int* d = nullptr;
    cudaMalloc(&d, 32 * sizeof(int));
    bump<<<1, 32>>>(Accum{d});
    printf("launched: %s\n", cudaGetErrorName(cudaGetLastError()));
    return 0;
}
