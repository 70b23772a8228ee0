// WMMA tiles that start 16 bytes past a 32-byte boundary, as NVIDIA's immaTensorCoreGemm loads its
// int8 tiles from shared memory (rows of 160 bytes, tiles 16 bytes apart along K). The CUDA
// Programming Guide asks load_matrix_sync for a 256-bit aligned pointer; this program asks the GPU
// whether a 128-bit aligned one loads, for every fragment type: each loads A from base + 16 bytes,
// multiplies by the identity and prints the sum of the result (the sum of A's elements).
#include <mma.h>

#include <cstdio>

using namespace nvcuda;

template <class In, class Acc, int M, int N, int K, class Precision = In>
__global__ void times_identity(const In* a, const In* identity, Acc* d) {
    wmma::fragment<wmma::matrix_a, M, N, K, Precision, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, Precision, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, M, N, K, Acc> fc;
    wmma::fill_fragment(fc, Acc(0));
    wmma::load_matrix_sync(fa, a, K);
    wmma::load_matrix_sync(fb, identity, N);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, N, wmma::mem_row_major);
}

template <class In, class Acc, int M, int N, int K, class Precision = In>
int run(const char* name) {
    const int offset = 16 / sizeof(In);  // 16 bytes past the allocation's 256-byte boundary
    In host_a[M * K + 16], host_i[K * N];
    double expected = 0;
    for (int i = 0; i < M * K; ++i) {
        host_a[offset + i] = In((i % 7) + 1);
        expected += (i % 7) + 1;
    }
    for (int r = 0; r < K; ++r)
        for (int c = 0; c < N; ++c) host_i[r * N + c] = In(r == c ? 1 : 0);
    In *a, *identity;
    Acc* d;
    cudaMalloc(&a, sizeof host_a);
    cudaMalloc(&identity, sizeof host_i);
    cudaMalloc(&d, M * N * sizeof(Acc));
    cudaMemcpy(a, host_a, sizeof host_a, cudaMemcpyHostToDevice);
    cudaMemcpy(identity, host_i, sizeof host_i, cudaMemcpyHostToDevice);
    times_identity<In, Acc, M, N, K, Precision><<<1, 32>>>(a + offset, identity, d);
    const cudaError_t e = cudaDeviceSynchronize();
    Acc out[M * N];
    cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int i = 0; i < M * N; ++i) sum += double(out[i]);
    printf("%s at 16 bytes past a 32-byte boundary: %s, sum %g (A's sum %g)\n", name, cudaGetErrorName(e), sum,
           expected);
    cudaFree(a);
    cudaFree(identity);
    cudaFree(d);
    return e == cudaSuccess ? 0 : 1;
}

int main() {
    int failed = 0;
    failed += run<__half, float, 16, 16, 16>("half m16n16k16");
    failed += run<unsigned char, int, 16, 16, 16>("u8 m16n16k16");
    failed += run<signed char, int, 16, 16, 16>("s8 m16n16k16");
    failed += run<__nv_bfloat16, float, 16, 16, 16>("bf16 m16n16k16");
    failed += run<float, float, 16, 16, 8, wmma::precision::tf32>("tf32 m16n16k8");
    failed += run<double, double, 8, 8, 4>("double m8n8k4");
    printf("%d failed\n", failed);
    return 0;
}
