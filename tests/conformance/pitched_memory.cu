// Pitched 2D allocations as image code uses them: cudaMallocPitch (rows padded to the pitch the
// device chooses), cudaMemset2D, cudaMemcpy2D and cudaMemcpy2DAsync between a tight host image
// and the padded device one, and a 2D kernel that finds each row through the pitch in bytes.
// The pitch itself is the device's choice and is never printed.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}

// out(x, y) = 2 * in(x, y) + in(width - 1 - x, y): a row mirror, both images pitched.
__global__ void mirrorAdd(const float* in, size_t inPitch, float* out, size_t outPitch, int width, int height) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        const float* inRow = (const float*)((const char*)in + y * inPitch);
        float* outRow = (float*)((char*)out + y * outPitch);
        outRow[x] = 2.0f * inRow[x] + inRow[width - 1 - x];
    }
}

int main() {
    const int width = 100, height = 37;
    const size_t rowBytes = width * sizeof(float);
    float* h_img = (float*)malloc(rowBytes * height);
    float* h_out = (float*)malloc(rowBytes * height);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) h_img[y * width + x] = (float)(y * 1000 + x);

    float *d_in, *d_out;
    size_t inPitch = 0, outPitch = 0;
    checkCudaErrors(cudaMallocPitch((void**)&d_in, &inPitch, rowBytes, height));
    checkCudaErrors(cudaMallocPitch(&d_out, &outPitch, rowBytes, height));
    printf("pitch holds a row: %s\n", inPitch >= rowBytes && outPitch >= rowBytes ? "yes" : "no");

    // 0xFF bytes are NaNs: an element the kernel misses compares unequal to everything.
    checkCudaErrors(cudaMemset2D(d_out, outPitch, 0xFF, rowBytes, height));
    checkCudaErrors(cudaMemcpy2D(d_in, inPitch, h_img, rowBytes, rowBytes, height, cudaMemcpyHostToDevice));
    dim3 block(32, 8);
    dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    mirrorAdd<<<grid, block>>>(d_in, inPitch, d_out, outPitch, width, height);
    checkCudaErrors(cudaGetLastError());
    cudaStream_t stream;
    checkCudaErrors(cudaStreamCreate(&stream));
    checkCudaErrors(cudaMemcpy2DAsync(h_out, rowBytes, d_out, outPitch, rowBytes, height, cudaMemcpyDeviceToHost,
                                      stream));
    checkCudaErrors(cudaStreamSynchronize(stream));

    int wrong = 0;
    double sum = 0;
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const float ref = 2.0f * h_img[y * width + x] + h_img[y * width + width - 1 - x];
            wrong += h_out[y * width + x] != ref;
            sum += h_out[y * width + x];
        }
    printf("out(0,0) = %.0f, out(99,0) = %.0f, out(5,36) = %.0f, sum %.0f, %d wrong\n", h_out[0], h_out[99],
           h_out[36 * width + 5], sum, wrong);

    // A sub-rectangle (columns 10..19 of rows 3..5) copied device to device into row 0 onwards.
    checkCudaErrors(cudaMemset2D(d_out, outPitch, 0, rowBytes, height));
    checkCudaErrors(cudaMemcpy2D(d_out, outPitch, (const char*)d_in + 3 * inPitch + 10 * sizeof(float), inPitch,
                                 10 * sizeof(float), 3, cudaMemcpyDeviceToDevice));
    float corner[3][10];
    checkCudaErrors(cudaMemcpy2D(corner, sizeof(corner[0]), d_out, outPitch, sizeof(corner[0]), 3,
                                 cudaMemcpyDeviceToHost));
    float tail = -1;
    checkCudaErrors(cudaMemcpy(&tail, (const char*)d_out + 10 * sizeof(float), sizeof(float), cudaMemcpyDeviceToHost));
    printf("sub-rectangle: %.0f %.0f %.0f, next column still %.0f\n", corner[0][0], corner[1][5], corner[2][9], tail);

    checkCudaErrors(cudaStreamDestroy(stream));
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    free(h_img);
    free(h_out);
    const bool ok = wrong == 0 && corner[2][9] == 5019.0f && tail == 0.0f;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
