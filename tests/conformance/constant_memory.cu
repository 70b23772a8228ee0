// __constant__ coefficients set with cudaMemcpyToSymbol, read back with cudaMemcpyFromSymbol.
#include <cstdio>

__constant__ float coeffs[5];
__constant__ int offset;

__global__ void stencil(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 && i < n - 2) {
        float acc = 0.0f;
        for (int k = -2; k <= 2; ++k) acc += coeffs[k + 2] * in[i + k];
        out[i] = acc + offset;
    }
}

int main() {
    const int n = 64;
    const float h_coeffs[5] = {1.0f, 2.0f, 4.0f, 2.0f, 1.0f};
    const int h_offset = 100;
    cudaMemcpyToSymbol(coeffs, h_coeffs, sizeof h_coeffs);
    cudaMemcpyToSymbol(offset, &h_offset, sizeof h_offset);
    float back[5];
    cudaMemcpyFromSymbol(back, coeffs, sizeof back);
    float h[n], r[n];
    for (int i = 0; i < n; ++i) h[i] = float(i);
    float *din, *dout;
    cudaMalloc(&din, sizeof h);
    cudaMalloc(&dout, sizeof h);
    cudaMemcpy(din, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(dout, 0, sizeof h);
    stencil<<<1, n>>>(din, dout, n);
    cudaMemcpy(r, dout, sizeof r, cudaMemcpyDeviceToHost);
    printf("coeffs back: %.0f %.0f %.0f %.0f %.0f\n", back[0], back[1], back[2], back[3], back[4]);
    printf("out[2] = %.0f, out[10] = %.0f, out[61] = %.0f, out[63] = %.0f\n", r[2], r[10], r[61], r[63]);
    return r[10] == 10.0f * 10 + 100 ? 0 : 1;
}
