// Block-wide votes: __syncthreads_count, __syncthreads_and, __syncthreads_or.
#include <cstdio>

__global__ void block_votes(const int* in, int* out) {
    const int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    const int count = __syncthreads_count(v > 50);
    const int all = __syncthreads_and(v >= 0);
    const int any = __syncthreads_or(v == 99);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x + 0] = count;
        out[3 * blockIdx.x + 1] = all != 0;
        out[3 * blockIdx.x + 2] = any != 0;
    }
}

int main() {
    const int blocks = 3, threads = 200;
    int h[blocks * threads], r[3 * blocks];
    for (int i = 0; i < blocks * threads; ++i) h[i] = (i * 13) % (i < 400 ? 100 : 90);
    int *d, *o;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof r);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    block_votes<<<blocks, threads>>>(d, o);
    cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost);
    for (int b = 0; b < blocks; ++b) printf("block %d: count %d and %d or %d\n", b, r[3 * b], r[3 * b + 1], r[3 * b + 2]);
    return 0;
}
