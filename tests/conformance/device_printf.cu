// Device printf: formats of every common type, from one thread so the order is defined.
#include <cstdio>

__global__ void report(int i, float f, double d, const char* label) {
    if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0) {
        printf("int %d, hex %x, unsigned %u, long long %lld\n", i, i, 3000000000u, -9000000000LL);
        printf("float %.3f, double %.6f, exp %.2e, char %c\n", f, d, 12345.678, 'Z');
        printf("grid (%d,%d) block (%d,%d)\n", gridDim.x, gridDim.y, blockDim.x, blockDim.y);
    }
}

__global__ void per_block() {
    if (threadIdx.x == 0) printf("block %d of %d\n", blockIdx.x, gridDim.x);
}

int main() {
    report<<<dim3(2, 3), dim3(4, 2)>>>(255, 1.25f, 3.141592653589793, "x");
    cudaDeviceSynchronize();
    per_block<<<1, 32>>>();
    cudaDeviceSynchronize();
    printf("host: done\n");
    return 0;
}
