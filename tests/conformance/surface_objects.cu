// Surface objects as NVIDIA's simpleSurfaceWrite and course code use them: a CUDA array allocated
// with cudaArraySurfaceLoadStore, written by surf2Dwrite (x in bytes) and read back through
// surf2Dread, a texture object and cudaMemcpy2DFromArray; the zero and clamp boundary modes for
// accesses outside the array; a layered array written by surf2DLayeredwrite; surf1Dread on a 1D
// array.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

const int W = 4, H = 3;

__global__ void write_pattern(cudaSurfaceObject_t surf) {
    const int x = threadIdx.x, y = threadIdx.y;
    surf2Dwrite(float(10 * y + x), surf, x * int(sizeof(float)), y);
    // Outside the array: the zero mode drops the store.
    if (x == 0 && y == 0) surf2Dwrite(-1.0f, surf, W * int(sizeof(float)), 0, cudaBoundaryModeZero);
}

__global__ void read_edges(cudaSurfaceObject_t surf, float* out) {
    out[0] = surf2Dread<float>(surf, 2 * 4, 1);                           // inside
    out[1] = surf2Dread<float>(surf, -4, 1, cudaBoundaryModeZero);        // left of row 1
    out[2] = surf2Dread<float>(surf, W * 4, 2, cudaBoundaryModeZero);     // right of row 2
    out[3] = surf2Dread<float>(surf, -8, 1, cudaBoundaryModeClamp);       // clamped to x = 0
    out[4] = surf2Dread<float>(surf, 40 * 4, 99, cudaBoundaryModeClamp);  // clamped to (W - 1, H - 1)
    float v;
    surf2Dread(&v, surf, 3 * 4, 0);
    out[5] = v;
}

__global__ void through_texture(cudaTextureObject_t tex, float* out) { *out = tex2D<float>(tex, 1.5f, 2.5f); }

__global__ void write_layers(cudaSurfaceObject_t surf) {
    surf2DLayeredwrite(int(100 * threadIdx.z + 10 * threadIdx.y + threadIdx.x), surf, threadIdx.x * 4, threadIdx.y,
                       threadIdx.z);
}

__global__ void read_1d(cudaSurfaceObject_t surf, short* out) {
    out[threadIdx.x] = surf1Dread<short>(surf, threadIdx.x * int(sizeof(short)));
}

cudaResourceDesc on_array(cudaArray_t array) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = array;
    return r;
}

int main() {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    CHECK(cudaMallocArray(&a, &f32, W, H, cudaArraySurfaceLoadStore));
    cudaResourceDesc r = on_array(a);
    cudaSurfaceObject_t surf;
    CHECK(cudaCreateSurfaceObject(&surf, &r));
    write_pattern<<<1, dim3(W, H)>>>(surf);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    float host[H][W];
    CHECK(cudaMemcpy2DFromArray(host, W * sizeof(float), a, 0, 0, W * sizeof(float), H, cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; ++y) printf("row %d: %g %g %g %g\n", y, host[y][0], host[y][1], host[y][2], host[y][3]);

    float* d;
    CHECK(cudaMalloc(&d, 6 * sizeof(float)));
    read_edges<<<1, 1>>>(surf, d);
    float edges[6];
    CHECK(cudaMemcpy(edges, d, sizeof edges, cudaMemcpyDeviceToHost));
    printf("surf2Dread inside %g, zero mode %g %g, clamp mode %g %g, pointer form %g\n", edges[0], edges[1], edges[2],
           edges[3], edges[4], edges[5]);

    cudaTextureDesc td = {};
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &r, &td, nullptr));
    through_texture<<<1, 1>>>(tex, d);
    float texel;
    CHECK(cudaMemcpy(&texel, d, sizeof texel, cudaMemcpyDeviceToHost));
    printf("tex2D of the written array at (1.5, 2.5) = %g\n", texel);
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaDestroySurfaceObject(surf));
    CHECK(cudaFreeArray(a));

    cudaChannelFormatDesc i32 = cudaCreateChannelDesc<int>();
    cudaArray_t layers;
    CHECK(cudaMalloc3DArray(&layers, &i32, make_cudaExtent(2, 2, 2), cudaArrayLayered | cudaArraySurfaceLoadStore));
    r = on_array(layers);
    CHECK(cudaCreateSurfaceObject(&surf, &r));
    write_layers<<<1, dim3(2, 2, 2)>>>(surf);
    CHECK(cudaGetLastError());
    int values[2][2][2];
    cudaMemcpy3DParms p = {};
    p.srcArray = layers;
    p.dstPtr = make_cudaPitchedPtr(values, 2 * sizeof(int), 2, 2);
    p.extent = make_cudaExtent(2, 2, 2);
    p.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&p));
    printf("layers: %d %d %d %d | %d %d %d %d\n", values[0][0][0], values[0][0][1], values[0][1][0], values[0][1][1],
           values[1][0][0], values[1][0][1], values[1][1][0], values[1][1][1]);
    CHECK(cudaDestroySurfaceObject(surf));
    CHECK(cudaFreeArray(layers));

    cudaChannelFormatDesc s16 = cudaCreateChannelDesc<short>();
    cudaArray_t line;
    CHECK(cudaMallocArray(&line, &s16, 3, 0, cudaArraySurfaceLoadStore));
    const short in[3] = {-7, 300, 12};
    CHECK(cudaMemcpy2DToArray(line, 0, 0, in, sizeof in, sizeof in, 1, cudaMemcpyHostToDevice));
    r = on_array(line);
    CHECK(cudaCreateSurfaceObject(&surf, &r));
    short* ds;
    CHECK(cudaMalloc(&ds, sizeof in));
    read_1d<<<1, 3>>>(surf, ds);
    short out[3];
    CHECK(cudaMemcpy(out, ds, sizeof out, cudaMemcpyDeviceToHost));
    printf("surf1Dread: %d %d %d\n", out[0], out[1], out[2]);
    CHECK(cudaDestroySurfaceObject(surf));
    CHECK(cudaFreeArray(line));
    CHECK(cudaFree(ds));
    CHECK(cudaFree(d));
    printf("done\n");
    return 0;
}
