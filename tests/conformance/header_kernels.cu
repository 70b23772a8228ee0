// The kernel and its __shared__ tile live in transpose_kernels.cuh.
#include <cstdio>
#include <vector>
#include "transpose_kernels.cuh"

int main() {
    const int w = 100, h = 70;
    std::vector<float> in(w * h), out(w * h);
    for (int i = 0; i < w * h; ++i) in[i] = float(i);
    float *din, *dout;
    cudaMalloc(&din, w * h * sizeof(float));
    cudaMalloc(&dout, w * h * sizeof(float));
    cudaMemcpy(din, in.data(), w * h * sizeof(float), cudaMemcpyHostToDevice);
    dim3 grid((w + TILE - 1) / TILE, (h + TILE - 1) / TILE), block(TILE, ROWS);
    transpose_tiled<<<grid, block>>>(dout, din, w, h);
    cudaMemcpy(out.data(), dout, w * h * sizeof(float), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) wrong += out[x * h + y] != in[y * w + x];
    printf("transpose %dx%d: %d wrong, out[1] = %.0f, out[%d] = %.0f\n", w, h, wrong, out[1], w * h - 1, out[w * h - 1]);
    cudaFree(din);
    cudaFree(dout);
    return wrong == 0 ? 0 : 1;
}
