// CUDA's vector types as public code uses them: sizes and alignments, make_* constructors,
// float4 vectorized loads through reinterpret_cast (four floats per thread), an array of
// __align__(16) structs against a structure of arrays, uchar4 pixels and double2/int2 math.
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

struct __align__(16) Particle {
    float3 pos;
    float mass;
};

// out = a * x + y, four elements per thread through float4.
__global__ void saxpy4(const float* x, const float* y, float* out, float a, int n4) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 xv = reinterpret_cast<const float4*>(x)[i];
        const float4 yv = reinterpret_cast<const float4*>(y)[i];
        reinterpret_cast<float4*>(out)[i] = make_float4(a * xv.x + yv.x, a * xv.y + yv.y, a * xv.z + yv.z, a * xv.w + yv.w);
    }
}

// Momentum-like sums from an array of structs and from a structure of arrays.
__global__ void weighted(const Particle* aos, const float* px, const float* py, const float* pz, const float* m,
                         float4* out_aos, float4* out_soa, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const Particle p = aos[i];
        out_aos[i] = make_float4(p.pos.x * p.mass, p.pos.y * p.mass, p.pos.z * p.mass, p.mass);
        out_soa[i] = make_float4(px[i] * m[i], py[i] * m[i], pz[i] * m[i], m[i]);
    }
}

// Integer grayscale of RGBA pixels: (77 R + 150 G + 29 B) >> 8, alpha kept.
__global__ void grayscale(const uchar4* in, uchar4* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const uchar4 p = in[i];
        const unsigned char g = (unsigned char)((77 * p.x + 150 * p.y + 29 * p.z) >> 8);
        out[i] = make_uchar4(g, g, g, p.w);
    }
}

__global__ void complexMul(const double2* a, const double2* b, double2* c, int2* parts, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = make_double2(a[i].x * b[i].x - a[i].y * b[i].y, a[i].x * b[i].y + a[i].y * b[i].x);
        parts[i] = make_int2((int)c[i].x, (int)c[i].y);
    }
}

int main() {
    printf("sizeof/alignof: float4 %zu/%zu, float3 %zu/%zu, float2 %zu/%zu, double2 %zu/%zu, int2 %zu/%zu, "
           "uchar4 %zu/%zu, short2 %zu/%zu, Particle %zu/%zu\n",
           sizeof(float4), alignof(float4), sizeof(float3), alignof(float3), sizeof(float2), alignof(float2),
           sizeof(double2), alignof(double2), sizeof(int2), alignof(int2), sizeof(uchar4), alignof(uchar4),
           sizeof(short2), alignof(short2), sizeof(Particle), alignof(Particle));
    int errors = 0;

    const int n = 4096, n4 = n / 4;
    float *h_x = (float*)malloc(n * sizeof(float)), *h_y = (float*)malloc(n * sizeof(float)),
          *h_o = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) {
        h_x[i] = (float)(i % 100);
        h_y[i] = (float)(i % 7);
    }
    float *d_x, *d_y, *d_o;
    checkCudaErrors(cudaMalloc((void**)&d_x, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_y, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_o, n * sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_y, h_y, n * sizeof(float), cudaMemcpyHostToDevice));
    saxpy4<<<(n4 + 255) / 256, 256>>>(d_x, d_y, d_o, 3.0f, n4);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_o, d_o, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        errors += h_o[i] != 3.0f * h_x[i] + h_y[i];
        sum += h_o[i];
    }
    printf("saxpy4: out[4095] = %.0f, sum %.0f\n", h_o[n - 1], sum);

    const int np = 100;
    Particle* h_p = (Particle*)malloc(np * sizeof(Particle));
    float* h_soa = (float*)malloc(4 * np * sizeof(float));
    for (int i = 0; i < np; ++i) {
        h_p[i].pos = make_float3((float)i, (float)(i % 10), -(float)(i % 3));
        h_p[i].mass = (float)(1 + i % 4);
        h_soa[i] = h_p[i].pos.x;
        h_soa[np + i] = h_p[i].pos.y;
        h_soa[2 * np + i] = h_p[i].pos.z;
        h_soa[3 * np + i] = h_p[i].mass;
    }
    Particle* d_p;
    float* d_soa;
    float4 *d_oa, *d_os;
    checkCudaErrors(cudaMalloc((void**)&d_p, np * sizeof(Particle)));
    checkCudaErrors(cudaMalloc((void**)&d_soa, 4 * np * sizeof(float)));
    checkCudaErrors(cudaMalloc((void**)&d_oa, np * sizeof(float4)));
    checkCudaErrors(cudaMalloc((void**)&d_os, np * sizeof(float4)));
    checkCudaErrors(cudaMemcpy(d_p, h_p, np * sizeof(Particle), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_soa, h_soa, 4 * np * sizeof(float), cudaMemcpyHostToDevice));
    weighted<<<1, 128>>>(d_p, d_soa, d_soa + np, d_soa + 2 * np, d_soa + 3 * np, d_oa, d_os, np);
    checkCudaErrors(cudaGetLastError());
    float4* h_oa = (float4*)malloc(np * sizeof(float4));
    float4* h_os = (float4*)malloc(np * sizeof(float4));
    checkCudaErrors(cudaMemcpy(h_oa, d_oa, np * sizeof(float4), cudaMemcpyDeviceToHost));
    checkCudaErrors(cudaMemcpy(h_os, d_os, np * sizeof(float4), cudaMemcpyDeviceToHost));
    float4 total = make_float4(0, 0, 0, 0);
    for (int i = 0; i < np; ++i) {
        errors += h_oa[i].x != h_os[i].x || h_oa[i].y != h_os[i].y || h_oa[i].z != h_os[i].z || h_oa[i].w != h_os[i].w;
        total.x += h_oa[i].x;
        total.y += h_oa[i].y;
        total.z += h_oa[i].z;
        total.w += h_oa[i].w;
    }
    printf("particles: sum m*x %.0f, m*y %.0f, m*z %.0f, m %.0f\n", total.x, total.y, total.z, total.w);

    const int npix = 256;
    uchar4 h_pix[npix], h_gray[npix];
    for (int i = 0; i < npix; ++i) h_pix[i] = make_uchar4(i, 255 - i, (i * 3) % 256, i % 2 ? 255 : 128);
    uchar4 *d_pix, *d_gray;
    checkCudaErrors(cudaMalloc((void**)&d_pix, sizeof(h_pix)));
    checkCudaErrors(cudaMalloc((void**)&d_gray, sizeof(h_gray)));
    checkCudaErrors(cudaMemcpy(d_pix, h_pix, sizeof(h_pix), cudaMemcpyHostToDevice));
    grayscale<<<2, 128>>>(d_pix, d_gray, npix);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_gray, d_gray, sizeof(h_gray), cudaMemcpyDeviceToHost));
    unsigned int graySum = 0;
    for (int i = 0; i < npix; ++i) {
        graySum += h_gray[i].x;
        errors += h_gray[i].x != (unsigned char)((77 * h_pix[i].x + 150 * h_pix[i].y + 29 * h_pix[i].z) >> 8) ||
                  h_gray[i].y != h_gray[i].x || h_gray[i].w != h_pix[i].w;
    }
    printf("grayscale: gray[0] %u, gray[200] %u (alpha %u), sum %u\n", h_gray[0].x, h_gray[200].x, h_gray[200].w,
           graySum);

    const int nc = 8;
    double2 h_a[nc], h_b[nc], h_c[nc];
    int2 h_parts[nc];
    for (int i = 0; i < nc; ++i) {
        h_a[i] = make_double2(i, 1 - i);
        h_b[i] = make_double2(2, i * 0.5);
    }
    double2 *d_a, *d_b, *d_c;
    int2* d_parts;
    checkCudaErrors(cudaMalloc((void**)&d_a, sizeof(h_a)));
    checkCudaErrors(cudaMalloc((void**)&d_b, sizeof(h_b)));
    checkCudaErrors(cudaMalloc((void**)&d_c, sizeof(h_c)));
    checkCudaErrors(cudaMalloc((void**)&d_parts, sizeof(h_parts)));
    checkCudaErrors(cudaMemcpy(d_a, h_a, sizeof(h_a), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_b, h_b, sizeof(h_b), cudaMemcpyHostToDevice));
    complexMul<<<1, 32>>>(d_a, d_b, d_c, d_parts, nc);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_c, d_c, sizeof(h_c), cudaMemcpyDeviceToHost));
    checkCudaErrors(cudaMemcpy(h_parts, d_parts, sizeof(h_parts), cudaMemcpyDeviceToHost));
    printf("complex: (3-2i)(2+1.5i) = %.1f%+.1fi, int2 (%d, %d); (7-6i)(2+3.5i) = %.1f%+.1fi\n", h_c[3].x, h_c[3].y,
           h_parts[3].x, h_parts[3].y, h_c[7].x, h_c[7].y);

    checkCudaErrors(cudaFree(d_x));
    checkCudaErrors(cudaFree(d_y));
    checkCudaErrors(cudaFree(d_o));
    checkCudaErrors(cudaFree(d_p));
    checkCudaErrors(cudaFree(d_soa));
    checkCudaErrors(cudaFree(d_oa));
    checkCudaErrors(cudaFree(d_os));
    checkCudaErrors(cudaFree(d_pix));
    checkCudaErrors(cudaFree(d_gray));
    checkCudaErrors(cudaFree(d_a));
    checkCudaErrors(cudaFree(d_b));
    checkCudaErrors(cudaFree(d_c));
    checkCudaErrors(cudaFree(d_parts));
    free(h_x);
    free(h_y);
    free(h_o);
    free(h_p);
    free(h_soa);
    free(h_oa);
    free(h_os);
    printf("%s\n", errors == 0 ? "PASSED" : "FAILED");
    return errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
