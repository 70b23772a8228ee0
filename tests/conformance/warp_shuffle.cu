// Warp reductions and broadcasts with shuffles: __shfl_down_sync tree, __shfl_xor_sync butterfly,
// __shfl_up_sync inclusive scan, __shfl_sync broadcast, widths below 32.
#include <cstdio>

__inline__ __device__ int warp_reduce_sum(int v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void shuffles(const int* in, int* out) {
    const int t = threadIdx.x, lane = t % 32;
    int v = in[t];
    const int down = warp_reduce_sum(v);
    int all = v;
    for (int m = 16; m > 0; m >>= 1) all += __shfl_xor_sync(0xffffffff, all, m);
    int scan = v;
    for (int d = 1; d < 32; d *= 2) {
        const int n = __shfl_up_sync(0xffffffff, scan, d);
        if (lane >= d) scan += n;
    }
    const int first_of_8 = __shfl_sync(0xffffffff, v, 0, 8);
    out[4 * t + 0] = lane == 0 ? down : -1;
    out[4 * t + 1] = all;
    out[4 * t + 2] = scan;
    out[4 * t + 3] = first_of_8;
}

int main() {
    const int n = 64;
    int h[n], r[4 * n];
    for (int i = 0; i < n; ++i) h[i] = (i * 5) % 11;
    int *d, *o;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof r);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    shuffles<<<1, n>>>(d, o);
    cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int t = 0; t < n; ++t) {
        int sum = 0, pre = 0;
        for (int k = t & ~31; k < (t & ~31) + 32; ++k) sum += h[k];
        for (int k = t & ~31; k <= t; ++k) pre += h[k];
        wrong += (t % 32 == 0 && r[4 * t] != sum) + (r[4 * t + 1] != sum) + (r[4 * t + 2] != pre) +
                 (r[4 * t + 3] != h[t & ~7]);
    }
    printf("warp sums %d %d, scan[31] %d, scan[40] %d, broadcast[13] %d, %d wrong\n", r[0], r[4 * 32], r[4 * 31 + 2],
           r[4 * 40 + 2], r[4 * 13 + 3], wrong);
    return wrong == 0 ? 0 : 1;
}
