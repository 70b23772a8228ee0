// Integer intrinsics and exact math: __popc, __clz, __ffs, __brev, __byte_perm, __mul24, __umulhi,
// __sad, min/max overloads, sqrtf and fmaf on exactly representable results.
#include <cstdio>

__global__ void intrinsics(unsigned x, int* out) {
    out[0] = __popc(x);
    out[1] = __clz(x);
    out[2] = __ffs(x);
    out[3] = static_cast<int>(__brev(x) >> 16);
    out[4] = static_cast<int>(__byte_perm(x, 0u, 0x0123));
    out[5] = __mul24(1000, -3000);
    out[6] = static_cast<int>(__umulhi(0x80000000u, 6u));
    out[7] = static_cast<int>(__sad(3, 10, 5u));
    out[8] = max(-4, min(7, 12));
    out[9] = static_cast<int>(sqrtf(1764.0f));
    out[10] = static_cast<int>(fmaf(3.0f, 7.0f, 0.5f) * 2.0f);
    out[11] = __popcll(0xffffffffffULL);
    out[12] = __clzll(1ULL << 40);
}

int main() {
    int* d;
    int h[13];
    cudaMalloc(&d, sizeof h);
    intrinsics<<<1, 1>>>(0x00f0a5c0u, d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 13; ++i) printf("%d%s", h[i], i < 12 ? " " : "\n");
    return 0;
}
