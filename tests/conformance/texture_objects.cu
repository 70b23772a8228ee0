// Texture objects as NVIDIA's samples and courses use them (simpleTexture, simplePitchLinearTexture,
// simpleLayeredTexture, simpleCubemapTexture, convolutionTexture, dct8x8): CUDA arrays filled by
// cudaMemcpy2DToArray and cudaMemcpy3D; point and linear filtering; wrap,
// clamp, mirror and border addressing; normalized coordinates; normalized-float reads of uchar4;
// half texels; tex1Dfetch on linear memory; pitched 2D memory; layered, cubemap and 3D arrays.
// The linear filter's weights are 9-bit fixed point with 8 fractional bits (CUDA Programming Guide,
// "Texture Fetching"): a fraction of 0.1 weighs 26/256 = 0.1015625. Every value printed is exact
// in float, or one correctly rounded conversion (the normalized uchar4 reads), so any CUDA GPU
// prints the same.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

struct Coord {
    float x, y, z;
    int layer;
};

enum Shape { k1D, k2D, k3D, k2DLayered, kCubemap, kFetch };

__global__ void fetch(cudaTextureObject_t tex, Shape shape, const Coord* at, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Coord c = at[i];
    switch (shape) {
        case k1D: out[i] = tex1D<float>(tex, c.x); break;
        case k2D: out[i] = tex2D<float>(tex, c.x, c.y); break;
        case k3D: out[i] = tex3D<float>(tex, c.x, c.y, c.z); break;
        case k2DLayered: out[i] = tex2DLayered<float>(tex, c.x, c.y, c.layer); break;
        case kCubemap: out[i] = texCubemap<float>(tex, c.x, c.y, c.z); break;
        case kFetch: out[i] = float(tex1Dfetch<int>(tex, int(c.x))); break;
    }
}

__global__ void fetch_rgba(cudaTextureObject_t tex, float x, float y, float4* out) { *out = tex2D<float4>(tex, x, y); }

// Runs the fetches of `at` through `tex` and prints "label(coordinates) = value" for each.
int run(const char* label, cudaTextureObject_t tex, Shape shape, const Coord* at, int n) {
    Coord* d_at;
    float* d_out;
    CHECK(cudaMalloc(&d_at, n * sizeof(Coord)));
    CHECK(cudaMalloc(&d_out, n * sizeof(float)));
    CHECK(cudaMemcpy(d_at, at, n * sizeof(Coord), cudaMemcpyHostToDevice));
    fetch<<<1, 32>>>(tex, shape, d_at, d_out, n);
    CHECK(cudaGetLastError());
    float out[32];
    CHECK(cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        printf("%s(%g", label, at[i].x);
        if (shape != k1D && shape != kFetch) printf(", %g", at[i].y);
        if (shape == k3D || shape == kCubemap) printf(", %g", at[i].z);
        if (shape == k2DLayered) printf(", layer %d", at[i].layer);
        printf(") = %.7g\n", out[i]);
    }
    CHECK(cudaFree(d_at));
    CHECK(cudaFree(d_out));
    return 0;
}

cudaTextureDesc describe(cudaTextureAddressMode mode, cudaTextureFilterMode filter, bool normalized,
                         cudaTextureReadMode read = cudaReadModeElementType) {
    cudaTextureDesc d = {};
    d.addressMode[0] = d.addressMode[1] = d.addressMode[2] = mode;
    d.filterMode = filter;
    d.readMode = read;
    d.normalizedCoords = normalized;
    return d;
}

cudaResourceDesc on_array(cudaArray_t array) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = array;
    return r;
}

int main() {
    // A 1D array of 4 floats: 0, 10, 20, 40.
    const float line[4] = {0, 10, 20, 40};
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a1;
    CHECK(cudaMallocArray(&a1, &f32, 4));
    CHECK(cudaMemcpy2DToArray(a1, 0, 0, line, sizeof line, sizeof line, 1, cudaMemcpyHostToDevice));
    cudaResourceDesc r1 = on_array(a1);
    const cudaTextureAddressMode modes[4] = {cudaAddressModeClamp, cudaAddressModeBorder, cudaAddressModeWrap,
                                             cudaAddressModeMirror};
    const char* mode_names[4] = {"clamp", "border", "wrap", "mirror"};
    for (int m = 0; m < 4; ++m) {
        // Normalized coordinates: texel i is centred at (i + 0.5) / 4.
        cudaTextureDesc td = describe(modes[m], cudaFilterModePoint, true);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r1, &td, nullptr));
        const Coord at[] = {{0.375f}, {-0.125f}, {1.125f}, {1.625f}, {-0.625f}};
        char label[64];
        snprintf(label, sizeof label, "point %s", mode_names[m]);
        if (run(label, t, k1D, at, 5)) return 1;
        CHECK(cudaDestroyTextureObject(t));
    }
    {
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModeLinear, false);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r1, &td, nullptr));
        // Unnormalized: x - 0.5 between texels i and i + 1; fractions 0.5, 0.25, 0.1, 0.9, and
        // outside on both sides (clamped to the edge texels).
        const Coord at[] = {{1.0f}, {1.75f}, {2.6f}, {3.4f}, {-3.0f}, {9.0f}, {0.5f}};
        if (run("linear clamp", t, k1D, at, 7)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        td = describe(cudaAddressModeWrap, cudaFilterModeLinear, true);
        CHECK(cudaCreateTextureObject(&t, &r1, &td, nullptr));
        const Coord wrapped[] = {{0.0f}, {1.0f}, {0.9375f}};  // between texel 3 and texel 0
        if (run("linear wrap", t, k1D, wrapped, 3)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        // A 32-bit wrap-mode request on unnormalized coordinates acts as clamp.
        td = describe(cudaAddressModeWrap, cudaFilterModePoint, false);
        CHECK(cudaCreateTextureObject(&t, &r1, &td, nullptr));
        const Coord unnormalized[] = {{-2.0f}, {5.5f}};
        if (run("point wrap unnormalized", t, k1D, unnormalized, 2)) return 1;
        CHECK(cudaDestroyTextureObject(t));
    }
    CHECK(cudaFreeArray(a1));

    // A 3 x 2 2D array from pitched host rows, read through a texture and copied back.
    const float grid[2][3] = {{1, 2, 4}, {8, 16, 32}};
    cudaArray_t a2;
    CHECK(cudaMallocArray(&a2, &f32, 3, 2));
    CHECK(cudaMemcpy2DToArray(a2, 0, 0, grid, 3 * sizeof(float), 3 * sizeof(float), 2, cudaMemcpyHostToDevice));
    {
        cudaResourceDesc r = on_array(a2);
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModeLinear, false);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        const Coord at[] = {{0.5f, 0.5f}, {1.0f, 1.0f}, {2.5f, 1.25f}, {1.5f, 1.5f}};
        if (run("bilinear", t, k2D, at, 4)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        float back[2][3] = {};
        CHECK(cudaMemcpy2DFromArray(back, 3 * sizeof(float), a2, sizeof(float), 0, 2 * sizeof(float), 2,
                                    cudaMemcpyDeviceToHost));
        printf("cudaMemcpy2DFromArray (columns 1-2): %g %g / %g %g\n", back[0][0], back[0][1], back[1][0], back[1][1]);
        float flat[3] = {};
        CHECK(cudaMemcpy2DFromArray(flat, sizeof flat, a2, 0, 1, sizeof flat, 1, cudaMemcpyDeviceToHost));
        printf("cudaMemcpy2DFromArray of row 1: %g %g %g\n", flat[0], flat[1], flat[2]);
    }
    CHECK(cudaFreeArray(a2));

    // uchar4 texels read as normalized floats.
    {
        const uchar4 px[2] = {{255, 0, 51, 128}, {0, 255, 102, 64}};
        cudaChannelFormatDesc u8x4 = cudaCreateChannelDesc<uchar4>();
        cudaArray_t a;
        CHECK(cudaMallocArray(&a, &u8x4, 2, 1));
        CHECK(cudaMemcpy2DToArray(a, 0, 0, px, sizeof px, sizeof px, 1, cudaMemcpyHostToDevice));
        cudaResourceDesc r = on_array(a);
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModePoint, false, cudaReadModeNormalizedFloat);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        float4* d;
        CHECK(cudaMalloc(&d, sizeof(float4)));
        for (float x : {0.5f, 1.5f}) {
            fetch_rgba<<<1, 1>>>(t, x, 0.5f, d);
            float4 v;
            CHECK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
            printf("uchar4 normalized (%g, 0.5) = %.7g %.7g %.7g %.7g\n", x, v.x, v.y, v.z, v.w);
        }
        CHECK(cudaFree(d));
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(a));
    }

    // Half texels are read as float.
    {
        const unsigned short halves[2] = {0x3C00, 0xC500};  // 1.0 and -5.0
        cudaChannelFormatDesc h = cudaCreateChannelDescHalf();
        cudaArray_t a;
        CHECK(cudaMallocArray(&a, &h, 2));
        CHECK(cudaMemcpy2DToArray(a, 0, 0, halves, sizeof halves, sizeof halves, 1, cudaMemcpyHostToDevice));
        cudaResourceDesc r = on_array(a);
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModeLinear, false);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        const Coord at[] = {{0.5f}, {1.5f}, {1.0f}};
        if (run("half", t, k1D, at, 3)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(a));
    }

    // tex1Dfetch on linear memory: an integer index, no filtering, 0 outside the memory.
    {
        const int values[5] = {3, 1, 4, 1, 5};
        int* d;
        CHECK(cudaMalloc(&d, sizeof values));
        CHECK(cudaMemcpy(d, values, sizeof values, cudaMemcpyHostToDevice));
        cudaResourceDesc r = {};
        r.resType = cudaResourceTypeLinear;
        r.res.linear.devPtr = d;
        r.res.linear.desc = cudaCreateChannelDesc<int>();
        r.res.linear.sizeInBytes = sizeof values;
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModePoint, false);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        const Coord at[] = {{0}, {2}, {4}, {5}};
        if (run("tex1Dfetch", t, kFetch, at, 4)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFree(d));
    }

    // Pitched 2D memory from cudaMallocPitch.
    {
        float* d;
        size_t pitch;
        CHECK(cudaMallocPitch(&d, &pitch, 3 * sizeof(float), 2));
        CHECK(cudaMemcpy2D(d, pitch, grid, 3 * sizeof(float), 3 * sizeof(float), 2, cudaMemcpyHostToDevice));
        cudaResourceDesc r = {};
        r.resType = cudaResourceTypePitch2D;
        r.res.pitch2D.devPtr = d;
        r.res.pitch2D.desc = f32;
        r.res.pitch2D.width = 3;
        r.res.pitch2D.height = 2;
        r.res.pitch2D.pitchInBytes = pitch;
        cudaTextureDesc td = describe(cudaAddressModeClamp, cudaFilterModePoint, true);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        const Coord at[] = {{0.5f, 0.75f}, {0.9f, 0.25f}};
        if (run("pitch2D", t, k2D, at, 2)) return 1;
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFree(d));
    }

    // Layered (2 layers of 2 x 2), cubemap (6 faces of 2 x 2, face f holding 10 f + texel) and 3D
    // (2 x 2 x 2) arrays, filled by cudaMemcpy3D.
    float cube[6][2][2];
    for (int f = 0; f < 6; ++f)
        for (int y = 0; y < 2; ++y)
            for (int x = 0; x < 2; ++x) cube[f][y][x] = float(10 * f + 2 * y + x);
    struct Kind {
        const char* label;
        unsigned flags;
        int depth;
        Shape shape;
    };
    const Kind kinds[3] = {{"layered", cudaArrayLayered, 2, k2DLayered},
                           {"cubemap", cudaArrayCubemap, 6, kCubemap},
                           {"3D", cudaArrayDefault, 2, k3D}};
    for (const Kind& k : kinds) {
        cudaArray_t a;
        CHECK(cudaMalloc3DArray(&a, &f32, make_cudaExtent(2, 2, k.depth), k.flags));
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(cube, 2 * sizeof(float), 2, 2);
        p.dstArray = a;
        p.extent = make_cudaExtent(2, 2, k.depth);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaResourceDesc r = on_array(a);
        cudaTextureDesc td = describe(cudaAddressModeClamp, k.shape == k3D ? cudaFilterModeLinear : cudaFilterModePoint,
                                      k.shape == kCubemap);
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &r, &td, nullptr));
        if (k.shape == k2DLayered) {
            const Coord at[] = {{1.5f, 0.5f, 0, 0}, {0.5f, 1.5f, 0, 1}, {1.5f, 1.5f, 0, 1}};
            if (run(k.label, t, k.shape, at, 3)) return 1;
        } else if (k.shape == kCubemap) {
            // One direction per face, each towards texel (1, 0) of its face.
            const Coord at[] = {{1, 0.5f, -0.5f}, {-1, 0.5f, 0.5f}, {0.5f, 1, -0.5f},
                                {0.5f, -1, 0.5f}, {0.5f, 0.5f, 1},  {-0.5f, 0.5f, -1}};
            if (run(k.label, t, k.shape, at, 6)) return 1;
        } else {
            const Coord at[] = {{1.0f, 1.0f, 1.0f}, {0.5f, 0.5f, 1.5f}, {1.5f, 0.5f, 0.75f}};
            if (run(k.label, t, k.shape, at, 3)) return 1;
        }
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(a));
    }
    printf("done\n");
    return 0;
}
