// Warp votes and matching: __ballot_sync, __any_sync, __all_sync, __popc, __match_any_sync,
// __activemask in a converged warp, and __reduce_add_sync (compute capability 8.0).
#include <cstdio>

__global__ void votes(const int* in, unsigned* out) {
    const int t = threadIdx.x;
    const int v = in[t];
    const unsigned ballot = __ballot_sync(0xffffffff, v > 5);
    const int any = __any_sync(0xffffffff, v == 9);
    const int all = __all_sync(0xffffffff, v >= 0);
    const unsigned same = __match_any_sync(0xffffffff, v % 3);
    const unsigned active = __activemask();
    const unsigned total = __reduce_add_sync(0xffffffff, static_cast<unsigned>(v));
    if (t % 32 == 0) {
        unsigned* o = out + 6 * (t / 32);
        o[0] = ballot;
        o[1] = __popc(ballot);
        o[2] = any;
        o[3] = all;
        o[4] = __popc(same);
        o[5] = total;
    }
    if (t == 0) out[12] = active;
}

int main() {
    int h[64];
    for (int i = 0; i < 64; ++i) h[i] = i < 32 ? i % 10 : (i * 3) % 8;
    int* d;
    unsigned* o;
    unsigned r[13];
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof r);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    votes<<<1, 64>>>(d, o);
    cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost);
    for (int w = 0; w < 2; ++w)
        printf("warp %d: ballot %08x popc %u any9 %u all>=0 %u same-mod3-as-lane0 %u sum %u\n", w, r[6 * w],
               r[6 * w + 1], r[6 * w + 2], r[6 * w + 3], r[6 * w + 4], r[6 * w + 5]);
    printf("activemask %08x\n", r[12]);
    return 0;
}
