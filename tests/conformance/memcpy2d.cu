// cudaMemset on part of a buffer, cudaMemcpy2D between pitched layouts, device-to-device copies.
#include <cstdio>

int main() {
    const int w = 5, h = 4, pitch = 8;  // pitch in ints on the device side
    int host[h][w], back[h][w];
    for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c) host[r][c] = 10 * r + c;
    int *d, *d2;
    cudaMalloc(&d, h * pitch * sizeof(int));
    cudaMalloc(&d2, h * pitch * sizeof(int));
    cudaMemset(d, 0xff, h * pitch * sizeof(int));
    cudaMemcpy2D(d, pitch * sizeof(int), host, w * sizeof(int), w * sizeof(int), h, cudaMemcpyHostToDevice);
    cudaMemcpy(d2, d, h * pitch * sizeof(int), cudaMemcpyDeviceToDevice);
    cudaMemcpy2D(back, w * sizeof(int), d2, pitch * sizeof(int), w * sizeof(int), h, cudaMemcpyDeviceToHost);
    int padding;
    cudaMemcpy(&padding, d2 + pitch - 1, sizeof(int), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c) wrong += back[r][c] != host[r][c];
    printf("%d wrong, back[3][4] %d, padding %d\n", wrong, back[3][4], padding);
    return wrong == 0 ? 0 : 1;
}
