// A 2D grid over a matrix with dim3 blocks, row-major indexing, and a bounds check on both axes.
#include <cstdio>

__global__ void mat_add(const int* a, const int* b, int* c, int rows, int cols) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) c[row * cols + col] = a[row * cols + col] + b[row * cols + col];
}

__global__ void coords3d(int* out) {
    const int i = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[i] = 100 * threadIdx.z + 10 * threadIdx.y + threadIdx.x;
}

int main() {
    const int rows = 37, cols = 53;
    static int a[rows * cols], b[rows * cols], c[rows * cols];
    for (int i = 0; i < rows * cols; ++i) a[i] = i, b[i] = 2 * i;
    int *da, *db, *dc;
    cudaMalloc(&da, sizeof a);
    cudaMalloc(&db, sizeof b);
    cudaMalloc(&dc, sizeof c);
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    dim3 block(16, 8);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    mat_add<<<grid, block>>>(da, db, dc, rows, cols);
    cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < rows * cols; ++i) wrong += c[i] != 3 * i;
    printf("grid %ux%u of %ux%u, %d wrong, c[last] %d\n", grid.x, grid.y, block.x, block.y, wrong, c[rows * cols - 1]);
    int* d3;
    int h3[24];
    cudaMalloc(&d3, sizeof h3);
    coords3d<<<1, dim3(4, 3, 2)>>>(d3);
    cudaMemcpy(h3, d3, sizeof h3, cudaMemcpyDeviceToHost);
    printf("3d: %d %d %d %d\n", h3[0], h3[5], h3[12], h3[23]);
    return wrong == 0 ? 0 : 1;
}
