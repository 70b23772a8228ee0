// 32-bit integer atomics: add, sub, min, max, and, or, xor, exch, inc, dec, CAS.
#include <cstdio>

__global__ void all_atomics(int* v, unsigned* u) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;  // 0..1023
    atomicAdd(&v[0], t);
    atomicSub(&v[1], 2);
    atomicMin(&v[2], 500 - t);
    atomicMax(&v[3], t % 700);
    atomicAnd(&u[0], ~(1u << (t % 32)) | (t % 64 < 32 ? 0u : 1u << (t % 32)));
    atomicOr(&u[1], 1u << (t % 20));
    atomicXor(&u[2], t % 3 == 0 ? 1u : 0u);
    atomicInc(&u[3], 99u);  // wraps to 0 after 99
    atomicDec(&u[4], 1000u);
    if (t == 777) atomicExch(&v[4], 4242);
    atomicCAS(&v[5], 0, t + 1);  // exactly one thread wins
}

int main() {
    int hv[6] = {0, 5000, 1000, -1, 0, 0};
    unsigned hu[5] = {0xffffffffu, 0u, 0u, 0u, 2000u};
    int* dv;
    unsigned* du;
    cudaMalloc(&dv, sizeof hv);
    cudaMalloc(&du, sizeof hu);
    cudaMemcpy(dv, hv, sizeof hv, cudaMemcpyHostToDevice);
    cudaMemcpy(du, hu, sizeof hu, cudaMemcpyHostToDevice);
    all_atomics<<<4, 256>>>(dv, du);
    cudaMemcpy(hv, dv, sizeof hv, cudaMemcpyDeviceToHost);
    cudaMemcpy(hu, du, sizeof hu, cudaMemcpyDeviceToHost);
    printf("add %d sub %d min %d max %d exch %d\n", hv[0], hv[1], hv[2], hv[3], hv[4]);
    printf("and %08x or %08x xor %u inc %u dec %u\n", hu[0], hu[1], hu[2], hu[3], hu[4]);
    printf("cas winner in range: %s\n", hv[5] >= 1 && hv[5] <= 1024 ? "yes" : "no");
    return hv[0] == 523776 ? 0 : 1;
}
