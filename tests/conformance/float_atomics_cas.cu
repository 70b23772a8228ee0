// Float atomics that CUDA does not provide, built as public code builds them: atomicMax and
// atomicMin for float as atomicCAS loops over __float_as_int/__int_as_float, the sign trick
// (int atomicMax for non-negative floats, unsigned atomicMin for negative ones), and an
// atomicCAS multiply. Many threads hit one address; the results do not depend on the order.
#include <cmath>
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

__device__ float atomicMaxFloat(float* address, float val) {
    int* address_as_int = (int*)address;
    int old = *address_as_int, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= val) break;
        old = atomicCAS(address_as_int, assumed, __float_as_int(val));
    } while (assumed != old);
    return __int_as_float(old);
}

__device__ float atomicMinFloat(float* address, float val) {
    int* address_as_int = (int*)address;
    int old = *address_as_int, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) <= val) break;
        old = atomicCAS(address_as_int, assumed, __float_as_int(val));
    } while (assumed != old);
    return __int_as_float(old);
}

// IEEE floats of one sign order like their bit patterns: as int for >= 0, reversed as unsigned for < 0.
__device__ float atomicMaxSignTrick(float* addr, float value) {
    return (value >= 0) ? __int_as_float(atomicMax((int*)addr, __float_as_int(value)))
                        : __uint_as_float(atomicMin((unsigned int*)addr, __float_as_uint(value)));
}

__device__ float atomicMulFloat(float* address, float val) {
    unsigned int* address_as_u = (unsigned int*)address;
    unsigned int old = *address_as_u, assumed;
    do {
        assumed = old;
        old = atomicCAS(address_as_u, assumed, __float_as_uint(val * __uint_as_float(assumed)));
    } while (assumed != old);
    return __uint_as_float(old);
}

// out[0]: CAS max, out[1]: CAS min, out[2]: sign-trick max, out[3]: product.
__global__ void floatAtomics(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMaxFloat(&out[0], in[i]);
        atomicMinFloat(&out[1], in[i]);
        atomicMaxSignTrick(&out[2], in[i]);
        // 2 or 0.5 from the first 48 threads: every partial product is a power of two between
        // 2^-32 and 2^16, exact in any order.
        if (i < 48) atomicMulFloat(&out[3], (i % 3 == 0) ? 2.0f : 0.5f);
    }
}

int main() {
    const int n = 1000;
    float* h_in = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h_in[i] = (float)((i * 37) % 1001 - 600) * 0.25f;
    float h_init[4] = {-1e30f, 1e30f, -1e30f, 1.0f};
    float *d_in, *d_out;
    checkCudaErrors(cudaMalloc((void**)&d_in, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_out, sizeof(h_init)));
    checkCudaErrors(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_out, h_init, sizeof(h_init), cudaMemcpyHostToDevice));
    floatAtomics<<<(n + 127) / 128, 128>>>(d_in, d_out, n);
    checkCudaErrors(cudaGetLastError());
    float h_out[4];
    checkCudaErrors(cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost));

    float ref_max = h_in[0], ref_min = h_in[0];
    int twos = 0;
    for (int i = 0; i < n; ++i) {
        ref_max = h_in[i] > ref_max ? h_in[i] : ref_max;
        ref_min = h_in[i] < ref_min ? h_in[i] : ref_min;
        if (i < 48) twos += (i % 3 == 0) ? 1 : -1;
    }
    const float ref_prod = ldexpf(1.0f, twos);
    printf("max (CAS loop)   %g (expected %g)\n", h_out[0], ref_max);
    printf("min (CAS loop)   %g (expected %g)\n", h_out[1], ref_min);
    printf("max (sign trick) %g (expected %g)\n", h_out[2], ref_max);
    printf("product          %g (expected 2^%d = %g)\n", h_out[3], twos, ref_prod);
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_out));
    free(h_in);
    const bool ok = h_out[0] == ref_max && h_out[1] == ref_min && h_out[2] == ref_max && h_out[3] == ref_prod;
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
