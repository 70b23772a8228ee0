// CUDA arrays, texture objects and surface objects, with CUDA's names, values and semantics
// (driver_types.h, texture_types.h, surface_types.h, channel_descriptor.h, driver_functions.h and
// the fetch functions of texture_indirect_functions.h and surface_indirect_functions.h).
//
// A CUDA array is device memory laid out in rows (cusim keeps it linear; a GPU's layout is opaque
// and only reachable through these functions). A texture object reads an array, linear memory or
// pitched 2D memory through the texture unit's addressing and filtering: point or linear filtering
// with the weights in 9-bit fixed point, 8 bits of them fractional, as the CUDA Programming Guide
// specifies ("Texture Fetching"); wrap, mirror, clamp and border addressing; normalized
// coordinates; element-type or normalized-float reads of 8- and 16-bit integers; 16-bit float
// texels read as float; layered and cubemap arrays. A surface object reads and writes an array
// created with cudaArraySurfaceLoadStore, x in bytes, with the trap, clamp and zero boundary modes.
// Not modelled: mipmaps, sRGB conversion, anisotropic filtering, resource views, texture gather
// on more than one channel's layout rules, and seamless cubemap filtering across faces. Texture
// and surface accesses are not seen by cusim's memcheck, racecheck or metrics.
#pragma once
#include <cstddef>

#include "cusim/vector_types.h"

enum cudaChannelFormatKind {
    cudaChannelFormatKindSigned = 0,
    cudaChannelFormatKindUnsigned = 1,
    cudaChannelFormatKindFloat = 2,
    cudaChannelFormatKindNone = 3,
    cudaChannelFormatKindNV12 = 4,
    cudaChannelFormatKindUnsignedNormalized8X1 = 5,
    cudaChannelFormatKindUnsignedNormalized8X2 = 6,
    cudaChannelFormatKindUnsignedNormalized8X4 = 7,
    cudaChannelFormatKindUnsignedNormalized16X1 = 8,
    cudaChannelFormatKindUnsignedNormalized16X2 = 9,
    cudaChannelFormatKindUnsignedNormalized16X4 = 10,
    cudaChannelFormatKindSignedNormalized8X1 = 11,
    cudaChannelFormatKindSignedNormalized8X2 = 12,
    cudaChannelFormatKindSignedNormalized8X4 = 13,
    cudaChannelFormatKindSignedNormalized16X1 = 14,
    cudaChannelFormatKindSignedNormalized16X2 = 15,
    cudaChannelFormatKindSignedNormalized16X4 = 16,
};

struct cudaChannelFormatDesc {
    int x;
    int y;
    int z;
    int w;
    enum cudaChannelFormatKind f;
};

struct cudaArray;
typedef struct cudaArray* cudaArray_t;
typedef const struct cudaArray* cudaArray_const_t;
struct cudaMipmappedArray;
typedef struct cudaMipmappedArray* cudaMipmappedArray_t;
typedef const struct cudaMipmappedArray* cudaMipmappedArray_const_t;

#define cudaArrayDefault 0x00
#define cudaArrayLayered 0x01
#define cudaArraySurfaceLoadStore 0x02
#define cudaArrayCubemap 0x04
#define cudaArrayTextureGather 0x08

struct cudaPitchedPtr {
    void* ptr;
    size_t pitch;
    size_t xsize;
    size_t ysize;
};
struct cudaExtent {
    size_t width;
    size_t height;
    size_t depth;
};
struct cudaPos {
    size_t x;
    size_t y;
    size_t z;
};
struct cudaMemcpy3DParms {
    cudaArray_t srcArray;
    struct cudaPos srcPos;
    struct cudaPitchedPtr srcPtr;
    cudaArray_t dstArray;
    struct cudaPos dstPos;
    struct cudaPitchedPtr dstPtr;
    struct cudaExtent extent;
    enum cudaMemcpyKind kind;
};

inline cudaPitchedPtr make_cudaPitchedPtr(void* d, size_t p, size_t xsz, size_t ysz) { return {d, p, xsz, ysz}; }
inline cudaPos make_cudaPos(size_t x, size_t y, size_t z) { return {x, y, z}; }
inline cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) { return {w, h, d}; }

enum cudaResourceType {
    cudaResourceTypeArray = 0x00,
    cudaResourceTypeMipmappedArray = 0x01,
    cudaResourceTypeLinear = 0x02,
    cudaResourceTypePitch2D = 0x03
};

struct cudaResourceDesc {
    enum cudaResourceType resType;
    union {
        struct {
            cudaArray_t array;
        } array;
        struct {
            cudaMipmappedArray_t mipmap;
        } mipmap;
        struct {
            void* devPtr;
            struct cudaChannelFormatDesc desc;
            size_t sizeInBytes;
        } linear;
        struct {
            void* devPtr;
            struct cudaChannelFormatDesc desc;
            size_t width;
            size_t height;
            size_t pitchInBytes;
        } pitch2D;
        struct {
            int reserved[32];
        } reserved;
    } res;
    unsigned int flags;
};

enum cudaResourceViewFormat { cudaResViewFormatNone = 0x00 };
struct cudaResourceViewDesc {
    enum cudaResourceViewFormat format;
    size_t width;
    size_t height;
    size_t depth;
    unsigned int firstMipmapLevel;
    unsigned int lastMipmapLevel;
    unsigned int firstLayer;
    unsigned int lastLayer;
    unsigned int reserved[16];
};

#define cudaTextureType1D 0x01
#define cudaTextureType2D 0x02
#define cudaTextureType3D 0x03
#define cudaTextureTypeCubemap 0x0C
#define cudaTextureType1DLayered 0xF1
#define cudaTextureType2DLayered 0xF2
#define cudaTextureTypeCubemapLayered 0xFC

enum cudaTextureAddressMode {
    cudaAddressModeWrap = 0,
    cudaAddressModeClamp = 1,
    cudaAddressModeMirror = 2,
    cudaAddressModeBorder = 3
};
enum cudaTextureFilterMode { cudaFilterModePoint = 0, cudaFilterModeLinear = 1 };
enum cudaTextureReadMode { cudaReadModeElementType = 0, cudaReadModeNormalizedFloat = 1 };

struct cudaTextureDesc {
    enum cudaTextureAddressMode addressMode[3];
    enum cudaTextureFilterMode filterMode;
    enum cudaTextureReadMode readMode;
    int sRGB;
    float borderColor[4];
    int normalizedCoords;
    unsigned int maxAnisotropy;
    enum cudaTextureFilterMode mipmapFilterMode;
    float mipmapLevelBias;
    float minMipmapLevelClamp;
    float maxMipmapLevelClamp;
    int disableTrilinearOptimization;
    int seamlessCubemap;
};
typedef unsigned long long cudaTextureObject_t;

#define cudaSurfaceType1D 0x01
#define cudaSurfaceType2D 0x02
#define cudaSurfaceType3D 0x03
#define cudaSurfaceTypeCubemap 0x0C
#define cudaSurfaceType1DLayered 0xF1
#define cudaSurfaceType2DLayered 0xF2
#define cudaSurfaceTypeCubemapLayered 0xFC
enum cudaSurfaceBoundaryMode { cudaBoundaryModeZero = 0, cudaBoundaryModeClamp = 1, cudaBoundaryModeTrap = 2 };
enum cudaSurfaceFormatMode { cudaFormatModeForced = 0, cudaFormatModeAuto = 1 };
typedef unsigned long long cudaSurfaceObject_t;

// ---- Host API ---------------------------------------------------------------------------------

cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f);
cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array);
cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width, size_t height = 0,
                            unsigned int flags = 0);
cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent,
                              unsigned int flags = 0);
cudaError_t cudaFreeArray(cudaArray_t array);
cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags, cudaArray_t array);
cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent);
cudaError_t cudaMemset3D(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent);
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p);
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream = 0);
cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                size_t width, size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                       cudaStream_t stream = 0);
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     cudaMemcpyKind kind = cudaMemcpyDeviceToDevice);
/// Deprecated in CUDA, as here (still declared by CUDA 13): a copy of @p count bytes starting at
/// (wOffset bytes, hOffset rows) that wraps to the next rows of the array.
#define CUSIM_DEPRECATED [[deprecated]]
CUSIM_DEPRECATED cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                              cudaMemcpyKind kind);
CUSIM_DEPRECATED cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                   cudaMemcpyKind kind, cudaStream_t stream = 0);
CUSIM_DEPRECATED cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                cudaMemcpyKind kind);
CUSIM_DEPRECATED cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                     cudaMemcpyKind kind, cudaStream_t stream = 0);
#undef CUSIM_DEPRECATED

cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject, const cudaResourceDesc* pResDesc,
                                    const cudaTextureDesc* pTexDesc, const cudaResourceViewDesc* pResViewDesc);
cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject);
cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc, cudaTextureObject_t texObject);
cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc, cudaTextureObject_t texObject);
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject, const cudaResourceDesc* pResDesc);
cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject);
cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc, cudaSurfaceObject_t surfObject);

// channel_descriptor.h: the format of a texel of type T.
template <class T>
inline cudaChannelFormatDesc cudaCreateChannelDesc() {
    return cudaCreateChannelDesc(0, 0, 0, 0, cudaChannelFormatKindNone);
}
inline cudaChannelFormatDesc cudaCreateChannelDescHalf() {
    return cudaCreateChannelDesc(16, 0, 0, 0, cudaChannelFormatKindFloat);
}
inline cudaChannelFormatDesc cudaCreateChannelDescHalf1() { return cudaCreateChannelDescHalf(); }
inline cudaChannelFormatDesc cudaCreateChannelDescHalf2() {
    return cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindFloat);
}
inline cudaChannelFormatDesc cudaCreateChannelDescHalf4() {
    return cudaCreateChannelDesc(16, 16, 16, 16, cudaChannelFormatKindFloat);
}
#define CUSIM_CHANNEL_DESC(T, bits, n, kind)                                                                    \
    template <>                                                                                                 \
    inline cudaChannelFormatDesc cudaCreateChannelDesc<T>() {                                                   \
        return cudaCreateChannelDesc(bits, n > 1 ? bits : 0, n > 2 ? bits : 0, n > 3 ? bits : 0, kind);         \
    }
#define CUSIM_CHANNEL_DESCS(S, U, bits)                                                                         \
    CUSIM_CHANNEL_DESC(S##1, bits, 1, cudaChannelFormatKindSigned)                                              \
    CUSIM_CHANNEL_DESC(S##2, bits, 2, cudaChannelFormatKindSigned)                                              \
    CUSIM_CHANNEL_DESC(S##4, bits, 4, cudaChannelFormatKindSigned)                                              \
    CUSIM_CHANNEL_DESC(U##1, bits, 1, cudaChannelFormatKindUnsigned)                                            \
    CUSIM_CHANNEL_DESC(U##2, bits, 2, cudaChannelFormatKindUnsigned)                                            \
    CUSIM_CHANNEL_DESC(U##4, bits, 4, cudaChannelFormatKindUnsigned)
CUSIM_CHANNEL_DESC(char, 8, 1, (char(-1) < 0 ? cudaChannelFormatKindSigned : cudaChannelFormatKindUnsigned))
CUSIM_CHANNEL_DESC(signed char, 8, 1, cudaChannelFormatKindSigned)
CUSIM_CHANNEL_DESC(unsigned char, 8, 1, cudaChannelFormatKindUnsigned)
CUSIM_CHANNEL_DESC(short, 16, 1, cudaChannelFormatKindSigned)
CUSIM_CHANNEL_DESC(unsigned short, 16, 1, cudaChannelFormatKindUnsigned)
CUSIM_CHANNEL_DESC(int, 32, 1, cudaChannelFormatKindSigned)
CUSIM_CHANNEL_DESC(unsigned int, 32, 1, cudaChannelFormatKindUnsigned)
CUSIM_CHANNEL_DESC(long, 32, 1, cudaChannelFormatKindSigned)  // CUDA's: long textures are 32-bit where long is
CUSIM_CHANNEL_DESC(unsigned long, 32, 1, cudaChannelFormatKindUnsigned)
CUSIM_CHANNEL_DESC(float, 32, 1, cudaChannelFormatKindFloat)
CUSIM_CHANNEL_DESCS(char, uchar, 8)
CUSIM_CHANNEL_DESCS(short, ushort, 16)
CUSIM_CHANNEL_DESCS(int, uint, 32)
CUSIM_CHANNEL_DESC(float1, 32, 1, cudaChannelFormatKindFloat)
CUSIM_CHANNEL_DESC(float2, 32, 2, cudaChannelFormatKindFloat)
CUSIM_CHANNEL_DESC(float4, 32, 4, cudaChannelFormatKindFloat)
#undef CUSIM_CHANNEL_DESCS
#undef CUSIM_CHANNEL_DESC

template <class T>
inline cudaError_t cudaMallocArray(cudaArray_t* array, size_t width, size_t height = 0, unsigned int flags = 0) {
    const cudaChannelFormatDesc desc = cudaCreateChannelDesc<T>();
    return cudaMallocArray(array, &desc, width, height, flags);
}

// ---- Device functions (texture_indirect_functions.h, surface_indirect_functions.h) ------------

namespace cusim::detail {
enum TextureShape : int { kTex1D, kTex2D, kTex3D, kTex1DLayered, kTex2DLayered, kTexCubemap, kTexCubemapLayered };
/// Writes the texel (or filtered value) at the coordinates into @p out (@p size bytes: the fetch's T).
void texture_fetch(cudaTextureObject_t object, TextureShape shape, float x, float y, float z, int layer, void* out,
                   std::size_t size, const char* function);
/// tex1Dfetch: element @p x of linear memory, no filtering; 0 outside it.
void texture_fetch_element(cudaTextureObject_t object, int x, void* out, std::size_t size);
/// tex2Dgather: component @p comp of the four texels a linear filter at (x, y) would blend.
void texture_gather(cudaTextureObject_t object, float x, float y, int comp, void* out, std::size_t size);
/// A surface load (@p write false) or store of @p size bytes at byte @p x of row y, slice z / layer.
void surface_access(cudaSurfaceObject_t object, TextureShape shape, int x, int y, int z, void* data, std::size_t size,
                    cudaSurfaceBoundaryMode mode, bool write, const char* function);
}  // namespace cusim::detail

#define CUSIM_TEX_FETCH(name, shape, params, x, y, z, layer)                                           \
    template <class T>                                                                               \
    inline T name params {                                                                           \
        T r{};                                                                                       \
        ::cusim::detail::texture_fetch(texObject, ::cusim::detail::shape, x, y, z, layer, &r, sizeof(T), #name); \
        return r;                                                                                    \
    }
CUSIM_TEX_FETCH(tex1D, kTex1D, (cudaTextureObject_t texObject, float x), x, 0.f, 0.f, 0)
CUSIM_TEX_FETCH(tex2D, kTex2D, (cudaTextureObject_t texObject, float x, float y), x, y, 0.f, 0)
CUSIM_TEX_FETCH(tex3D, kTex3D, (cudaTextureObject_t texObject, float x, float y, float z), x, y, z, 0)
CUSIM_TEX_FETCH(tex1DLayered, kTex1DLayered, (cudaTextureObject_t texObject, float x, int layer), x, 0.f, 0.f, layer)
CUSIM_TEX_FETCH(tex2DLayered, kTex2DLayered, (cudaTextureObject_t texObject, float x, float y, int layer), x, y, 0.f,
                layer)
CUSIM_TEX_FETCH(texCubemap, kTexCubemap, (cudaTextureObject_t texObject, float x, float y, float z), x, y, z, 0)
CUSIM_TEX_FETCH(texCubemapLayered, kTexCubemapLayered,
                (cudaTextureObject_t texObject, float x, float y, float z, int layer), x, y, z, layer)
// No mipmaps in cusim: every level of detail reads level 0.
CUSIM_TEX_FETCH(tex1DLod, kTex1D, (cudaTextureObject_t texObject, float x, float), x, 0.f, 0.f, 0)
CUSIM_TEX_FETCH(tex2DLod, kTex2D, (cudaTextureObject_t texObject, float x, float y, float), x, y, 0.f, 0)
CUSIM_TEX_FETCH(tex3DLod, kTex3D, (cudaTextureObject_t texObject, float x, float y, float z, float), x, y, z, 0)
CUSIM_TEX_FETCH(tex2DGrad, kTex2D, (cudaTextureObject_t texObject, float x, float y, float2, float2), x, y, 0.f, 0)
#undef CUSIM_TEX_FETCH

template <class T>
inline T tex1Dfetch(cudaTextureObject_t texObject, int x) {
    T r{};
    ::cusim::detail::texture_fetch_element(texObject, x, &r, sizeof(T));
    return r;
}
template <class T>
inline T tex2Dgather(cudaTextureObject_t texObject, float x, float y, int comp = 0) {
    T r{};
    ::cusim::detail::texture_gather(texObject, x, y, comp, &r, sizeof(T));
    return r;
}
// The forms that return through a pointer.
template <class T>
inline void tex1Dfetch(T* ret, cudaTextureObject_t texObject, int x) { *ret = tex1Dfetch<T>(texObject, x); }
template <class T>
inline void tex1D(T* ret, cudaTextureObject_t texObject, float x) { *ret = tex1D<T>(texObject, x); }
template <class T>
inline void tex2D(T* ret, cudaTextureObject_t texObject, float x, float y) { *ret = tex2D<T>(texObject, x, y); }
template <class T>
inline void tex3D(T* ret, cudaTextureObject_t texObject, float x, float y, float z) {
    *ret = tex3D<T>(texObject, x, y, z);
}
template <class T>
inline void tex1DLayered(T* ret, cudaTextureObject_t texObject, float x, int layer) {
    *ret = tex1DLayered<T>(texObject, x, layer);
}
template <class T>
inline void tex2DLayered(T* ret, cudaTextureObject_t texObject, float x, float y, int layer) {
    *ret = tex2DLayered<T>(texObject, x, y, layer);
}
template <class T>
inline void texCubemap(T* ret, cudaTextureObject_t texObject, float x, float y, float z) {
    *ret = texCubemap<T>(texObject, x, y, z);
}
template <class T>
inline void tex2Dgather(T* ret, cudaTextureObject_t texObject, float x, float y, int comp = 0) {
    *ret = tex2Dgather<T>(texObject, x, y, comp);
}

#define CUSIM_SURF_READ(name, shape, params, x, y, z)                                                    \
    template <class T>                                                                                 \
    inline T name params {                                                                             \
        T r{};                                                                                         \
        ::cusim::detail::surface_access(surfObject, ::cusim::detail::shape, x, y, z, &r, sizeof(T), boundaryMode, \
                                        false, #name);                                                 \
        return r;                                                                                      \
    }                                                                                                  \
    template <class T>                                                                                 \
    inline void name(T* ret, CUSIM_UNPAREN params) {                                                   \
        ::cusim::detail::surface_access(surfObject, ::cusim::detail::shape, x, y, z, ret, sizeof(T), boundaryMode, \
                                        false, #name);                                                 \
    }
#define CUSIM_SURF_WRITE(name, shape, params, x, y, z)                                                   \
    template <class T>                                                                                 \
    inline void name(T data, CUSIM_UNPAREN params) {                                                   \
        ::cusim::detail::surface_access(surfObject, ::cusim::detail::shape, x, y, z, &data, sizeof(T), boundaryMode, \
                                        true, #name);                                                  \
    }
#define CUSIM_UNPAREN(...) __VA_ARGS__
#define CUSIM_SURF_MODE cudaSurfaceBoundaryMode boundaryMode = cudaBoundaryModeTrap
CUSIM_SURF_READ(surf1Dread, kTex1D, (cudaSurfaceObject_t surfObject, int x, CUSIM_SURF_MODE), x, 0, 0)
CUSIM_SURF_READ(surf2Dread, kTex2D, (cudaSurfaceObject_t surfObject, int x, int y, CUSIM_SURF_MODE), x, y, 0)
CUSIM_SURF_READ(surf3Dread, kTex3D, (cudaSurfaceObject_t surfObject, int x, int y, int z, CUSIM_SURF_MODE), x, y, z)
CUSIM_SURF_READ(surf1DLayeredread, kTex1DLayered, (cudaSurfaceObject_t surfObject, int x, int layer, CUSIM_SURF_MODE),
                x, 0, layer)
CUSIM_SURF_READ(surf2DLayeredread, kTex2DLayered,
                (cudaSurfaceObject_t surfObject, int x, int y, int layer, CUSIM_SURF_MODE), x, y, layer)
CUSIM_SURF_READ(surfCubemapread, kTexCubemap, (cudaSurfaceObject_t surfObject, int x, int y, int face, CUSIM_SURF_MODE),
                x, y, face)
CUSIM_SURF_READ(surfCubemapLayeredread, kTexCubemapLayered,
                (cudaSurfaceObject_t surfObject, int x, int y, int layerFace, CUSIM_SURF_MODE), x, y, layerFace)
CUSIM_SURF_WRITE(surf1Dwrite, kTex1D, (cudaSurfaceObject_t surfObject, int x, CUSIM_SURF_MODE), x, 0, 0)
CUSIM_SURF_WRITE(surf2Dwrite, kTex2D, (cudaSurfaceObject_t surfObject, int x, int y, CUSIM_SURF_MODE), x, y, 0)
CUSIM_SURF_WRITE(surf3Dwrite, kTex3D, (cudaSurfaceObject_t surfObject, int x, int y, int z, CUSIM_SURF_MODE), x, y, z)
CUSIM_SURF_WRITE(surf1DLayeredwrite, kTex1DLayered,
                 (cudaSurfaceObject_t surfObject, int x, int layer, CUSIM_SURF_MODE), x, 0, layer)
CUSIM_SURF_WRITE(surf2DLayeredwrite, kTex2DLayered,
                 (cudaSurfaceObject_t surfObject, int x, int y, int layer, CUSIM_SURF_MODE), x, y, layer)
CUSIM_SURF_WRITE(surfCubemapwrite, kTexCubemap,
                 (cudaSurfaceObject_t surfObject, int x, int y, int face, CUSIM_SURF_MODE), x, y, face)
CUSIM_SURF_WRITE(surfCubemapLayeredwrite, kTexCubemapLayered,
                 (cudaSurfaceObject_t surfObject, int x, int y, int layerFace, CUSIM_SURF_MODE), x, y, layerFace)
#undef CUSIM_SURF_MODE
#undef CUSIM_UNPAREN
#undef CUSIM_SURF_WRITE
#undef CUSIM_SURF_READ
