// CUDA arrays, texture objects and surface objects (include/cusim/texture_api.h).
//
// An array is one device allocation (cusim's device memory: copies check it as they check any
// device pointer), slices one after the other, rows `pitch` bytes apart. A texture or surface
// object is a slot of a fixed table, its handle the slot's index + 1 (0 is never a valid object,
// as on a GPU); kernels read the slot without a lock, the host writes it under one.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "internal.h"

struct cudaArray {
    char* data = nullptr;
    cudaChannelFormatDesc desc{};
    cudaExtent extent{};   // as allocated: width, height (0 for 1D), depth (0 for 2D; layers; 6 x cubemaps)
    unsigned int flags = 0;
    size_t texel = 0;      // bytes per element
    size_t width = 0, height = 0, slices = 0;  // at least 1 each
    size_t pitch = 0;      // bytes per row
    size_t slice_bytes = 0;
};

namespace cusim::detail {
namespace {

/// What a texture or surface reads: rows of texels, slices of rows.
struct Resource {
    char* data = nullptr;
    cudaChannelFormatDesc desc{};
    int channels = 0;
    int bits = 0;        // per channel (cusim takes every channel at the size of the first)
    size_t texel = 0;    // bytes
    size_t width = 0, height = 1, slices = 1;
    size_t pitch = 0, slice_bytes = 0;
    bool linear = false;  // cudaResourceTypeLinear: tex1Dfetch only
};

struct Object {
    bool surface = false;
    Resource res;
    cudaResourceDesc res_desc{};
    cudaTextureDesc tex_desc{};
    bool float_result = false;  // float, half or normalized reads: what filtering applies to
};

constexpr size_t kMaxObjects = 1 << 16;
std::atomic<Object*> g_objects[kMaxObjects];
std::mutex g_objects_mu;
std::vector<size_t> g_free_slots;
size_t g_next_slot = 0;
std::mutex g_arrays_mu;
std::vector<cudaArray*> g_arrays;  // live arrays

bool live_array(const cudaArray* a) {
    std::lock_guard<std::mutex> lk(g_arrays_mu);
    return a && std::find(g_arrays.begin(), g_arrays.end(), a) != g_arrays.end();
}

cudaError_t fail(cudaError_t err, const char* api, const std::string& detail) { return runtime_error(err, api, detail); }

/// Checks a channel format: 1, 2 or 4 channels of 8, 16 or 32 bits (all of one size), a kind
/// that fits the size. Fills channels, bits, texel; returns the reason it is refused, or "".
std::string read_format(const cudaChannelFormatDesc& d, Resource& r) {
    const int b[4] = {d.x, d.y, d.z, d.w};
    int n = 0;
    while (n < 4 && b[n] != 0) ++n;
    for (int i = n; i < 4; ++i)
        if (b[i] != 0) return "a channel of the format has bits after a channel of 0 bits";
    if (n == 0 || n == 3) return "the format has " + std::to_string(n) + " channels (1, 2 or 4 are possible)";
    for (int i = 1; i < n; ++i)
        if (b[i] != b[0]) return "the channels of the format have different sizes";
    if (b[0] != 8 && b[0] != 16 && b[0] != 32) return "a channel of " + std::to_string(b[0]) + " bits (8, 16 or 32)";
    if (d.f == cudaChannelFormatKindFloat && b[0] == 8) return "an 8-bit float channel";
    if (d.f != cudaChannelFormatKindSigned && d.f != cudaChannelFormatKindUnsigned && d.f != cudaChannelFormatKindFloat)
        return "channel format kind " + std::to_string(int(d.f)) + " (cusim models Signed, Unsigned and Float)";
    r.desc = d, r.channels = n, r.bits = b[0], r.texel = size_t(n) * size_t(b[0]) / 8;
    return "";
}

float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: normalize
        int e = -1;
        uint32_t m = mant;
        do {
            ++e;
            m <<= 1;
        } while ((m & 0x400u) == 0);
        bits = sign | (uint32_t(112 - e) << 23) | ((m & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

/// Channel @p c of the texel at @p p as a float: float and half channels as they are, integers
/// normalized (unsigned to [0, 1], signed to [-1, 1]) when @p normalize, else converted.
float channel_value(const Resource& r, const char* p, int c, bool normalize) {
    const char* q = p + size_t(c) * size_t(r.bits) / 8;
    const bool is_signed = r.desc.f == cudaChannelFormatKindSigned;
    if (r.desc.f == cudaChannelFormatKindFloat) {
        if (r.bits == 16) {
            uint16_t h;
            std::memcpy(&h, q, 2);
            return half_to_float(h);
        }
        float f;
        std::memcpy(&f, q, 4);
        return f;
    }
    double v, scale;
    if (r.bits == 8) {
        v = is_signed ? double(int8_t(*q)) : double(uint8_t(*q));
        scale = is_signed ? 127.0 : 255.0;
    } else if (r.bits == 16) {
        int16_t s;
        std::memcpy(&s, q, 2);
        v = is_signed ? double(s) : double(uint16_t(s));
        scale = is_signed ? 32767.0 : 65535.0;
    } else {
        int32_t s;
        std::memcpy(&s, q, 4);
        v = is_signed ? double(s) : double(uint32_t(s));
        scale = 1.0;  // 32-bit integers are never normalized
    }
    if (!normalize || r.bits == 32) return float(v);
    return float(std::max(v / scale, -1.0));
}

/// The index an address mode makes of integer texel coordinate @p i in [0, n); -1 for a border texel.
long address(long i, long n, cudaTextureAddressMode mode, bool normalized) {
    if (i >= 0 && i < n) return i;
    // Wrap and mirror need normalized coordinates; otherwise a GPU clamps.
    if (!normalized && (mode == cudaAddressModeWrap || mode == cudaAddressModeMirror)) mode = cudaAddressModeClamp;
    switch (mode) {
        case cudaAddressModeWrap: return ((i % n) + n) % n;
        case cudaAddressModeMirror: {
            const long m = ((i % (2 * n)) + 2 * n) % (2 * n);
            return m < n ? m : 2 * n - 1 - m;
        }
        case cudaAddressModeBorder: return -1;
        default: return std::clamp(i, 0L, n - 1);
    }
}

/// A linear filter's weight: the fraction in 9-bit fixed point with 8 fractional bits.
float weight(float frac) { return std::nearbyint(frac * 256.0f) / 256.0f; }

[[noreturn]] void device_fault(const std::string& report) { fail_current_block(cudaErrorIllegalAddress, report); }

const Object* object_of(unsigned long long handle, bool surface, const char* function) {
    const Object* o = handle >= 1 && handle <= kMaxObjects ? g_objects[handle - 1].load(std::memory_order_acquire)
                                                            : nullptr;
    const char* what = surface ? "surface" : "texture";
    if (!o || o->surface != surface) {
        const std::string why = std::string(function) + " on " + what + " object " + std::to_string(handle) +
                                ", which is not a live " + what + " object (never created, or destroyed)";
        if (tls_view.in_kernel) device_fault(why);
        return nullptr;
    }
    return o;
}

/// The value at texel (i, j) of slice k as up to 4 floats; zeros (or the border color) outside.
void texel_floats(const Object& o, long i, long j, long k, float out[4]) {
    const Resource& r = o.res;
    const bool norm = o.tex_desc.normalizedCoords != 0;
    const long x = address(i, long(r.width), o.tex_desc.addressMode[0], norm);
    const long y = r.height > 1 || j != 0 ? address(j, long(r.height), o.tex_desc.addressMode[1], norm) : 0;
    if (x < 0 || y < 0 || k < 0 || size_t(k) >= r.slices) {
        for (int c = 0; c < 4; ++c) out[c] = o.tex_desc.borderColor[c];
        return;
    }
    const char* p = r.data + size_t(k) * r.slice_bytes + size_t(y) * r.pitch + size_t(x) * r.texel;
    const bool normalize = o.tex_desc.readMode == cudaReadModeNormalizedFloat;
    for (int c = 0; c < 4; ++c) out[c] = c < r.channels ? channel_value(r, p, c, normalize) : 0.0f;
}

void write_floats(const float v[4], int channels, void* out, size_t size) {
    const size_t n = std::min<size_t>(size / sizeof(float), size_t(channels));
    std::memcpy(out, v, n * sizeof(float));
}

/// The raw bytes of a texel for an element-type read of an integer texture (no filtering).
void texel_bytes(const Object& o, long i, long j, long k, void* out, size_t size) {
    const Resource& r = o.res;
    const bool norm = o.tex_desc.normalizedCoords != 0;
    const long x = address(i, long(r.width), o.tex_desc.addressMode[0], norm);
    const long y = r.height > 1 || j != 0 ? address(j, long(r.height), o.tex_desc.addressMode[1], norm) : 0;
    if (x < 0 || y < 0 || k < 0 || size_t(k) >= r.slices) return;  // border: zeros
    std::memcpy(out, r.data + size_t(k) * r.slice_bytes + size_t(y) * r.pitch + size_t(x) * r.texel,
                std::min(size, r.texel));
}

/// Cubemap face selection (CUDA Programming Guide, "Cubemap Textures"): the face of the major
/// axis of (x, y, z) and the normalized coordinates (u, v) on it.
void cube_face(float x, float y, float z, int& face, float& u, float& v) {
    const float ax = std::fabs(x), ay = std::fabs(y), az = std::fabs(z);
    float s, t, m;
    if (ax >= ay && ax >= az) {
        m = ax, face = x >= 0 ? 0 : 1, s = x >= 0 ? -z : z, t = -y;
    } else if (ay >= az) {
        m = ay, face = y >= 0 ? 2 : 3, s = x, t = y >= 0 ? z : -z;
    } else {
        m = az, face = z >= 0 ? 4 : 5, s = z >= 0 ? x : -x, t = -y;
    }
    u = (s / m + 1.0f) * 0.5f;
    v = (t / m + 1.0f) * 0.5f;
}

}  // namespace

void texture_fetch(cudaTextureObject_t object, TextureShape shape, float x, float y, float z, int layer, void* out,
                   std::size_t size, const char* function) {
    const Object* o = object_of(object, false, function);
    if (!o) return;
    const Resource& r = o->res;
    long slice = 0;
    bool two_d = shape != kTex1D && shape != kTex1DLayered;
    Object face_object;  // cubemaps: each face clamps at its edges
    const Object* obj = o;
    if (shape == kTexCubemap || shape == kTexCubemapLayered) {
        int face;
        float u, v;
        cube_face(x, y, z, face, u, v);
        slice = long(face) + (shape == kTexCubemapLayered ? 6L * layer : 0L);
        face_object = *o;
        face_object.tex_desc.normalizedCoords = 1;
        face_object.tex_desc.addressMode[0] = face_object.tex_desc.addressMode[1] = cudaAddressModeClamp;
        obj = &face_object;
        x = u, y = v;
    } else if (shape == kTex1DLayered || shape == kTex2DLayered) {
        slice = layer;
    }
    const bool norm = obj->tex_desc.normalizedCoords != 0;
    const float fx = norm ? x * float(r.width) : x;
    const float fy = two_d ? (norm ? y * float(r.height) : y) : 0.0f;
    const bool three_d = shape == kTex3D;
    const float fz = three_d ? (norm ? z * float(r.slices) : z) : 0.0f;
    // A layer (or cubemap face) index outside the array reads the nearest one, as on a GPU.
    slice = std::clamp(slice, 0L, long(r.slices) - 1);
    auto slice_of = [&](long k) {
        return three_d ? address(k, long(r.slices), obj->tex_desc.addressMode[2], norm) : slice;
    };
    if (!o->float_result || obj->tex_desc.filterMode == cudaFilterModePoint) {
        const long i = long(std::floor(fx)), j = long(std::floor(fy)), k = slice_of(long(std::floor(fz)));
        if (o->float_result) {
            float v[4];
            texel_floats(*obj, i, j, k, v);
            write_floats(v, r.channels, out, size);
        } else {
            texel_bytes(*obj, i, j, k, out, size);
        }
        return;
    }
    // Linear filtering: the 2, 4 or 8 texels around (x - 0.5, y - 0.5, z - 0.5), weighted.
    const float xb = fx - 0.5f, yb = fy - 0.5f, zb = fz - 0.5f;
    const long i = long(std::floor(xb)), j = long(std::floor(yb)), k = long(std::floor(zb));
    const float a = weight(xb - std::floor(xb)), b = two_d ? weight(yb - std::floor(yb)) : 0.0f,
                g = three_d ? weight(zb - std::floor(zb)) : 0.0f;
    float acc[4] = {0, 0, 0, 0};
    for (int dz = 0; dz < (three_d ? 2 : 1); ++dz) {
        for (int dy = 0; dy < (two_d ? 2 : 1); ++dy) {
            for (int dx = 0; dx < 2; ++dx) {
                const float w = (dx ? a : 1.0f - a) * (two_d ? (dy ? b : 1.0f - b) : 1.0f) *
                                (three_d ? (dz ? g : 1.0f - g) : 1.0f);
                float v[4];
                texel_floats(*obj, i + dx, j + dy, slice_of(k + dz), v);
                for (int c = 0; c < 4; ++c) acc[c] += w * v[c];
            }
        }
    }
    write_floats(acc, r.channels, out, size);
}

void texture_fetch_element(cudaTextureObject_t object, int x, void* out, std::size_t size) {
    const Object* o = object_of(object, false, "tex1Dfetch");
    if (!o) return;
    const Resource& r = o->res;
    if (x < 0 || size_t(x) >= r.width) return;  // outside linear memory a fetch returns 0
    const char* p = r.data + size_t(x) * r.texel;
    if (o->float_result) {
        float v[4];
        const bool normalize = o->tex_desc.readMode == cudaReadModeNormalizedFloat;
        for (int c = 0; c < 4; ++c) v[c] = c < r.channels ? channel_value(r, p, c, normalize) : 0.0f;
        write_floats(v, r.channels, out, size);
    } else {
        std::memcpy(out, p, std::min(size, r.texel));
    }
}

void texture_gather(cudaTextureObject_t object, float x, float y, int comp, void* out, std::size_t size) {
    const Object* o = object_of(object, false, "tex2Dgather");
    if (!o) return;
    const Resource& r = o->res;
    const bool norm = o->tex_desc.normalizedCoords != 0;
    const float xb = (norm ? x * float(r.width) : x) - 0.5f, yb = (norm ? y * float(r.height) : y) - 0.5f;
    const long i = long(std::floor(xb)), j = long(std::floor(yb));
    // The order of CUDA's gather: (i, j + 1), (i + 1, j + 1), (i + 1, j), (i, j).
    const long di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
    float v[4];
    for (int t = 0; t < 4; ++t) {
        float texel[4];
        texel_floats(*o, i + di[t], j + dj[t], 0, texel);
        v[t] = comp >= 0 && comp < 4 ? texel[comp] : 0.0f;
    }
    write_floats(v, 4, out, size);
}

void surface_access(cudaSurfaceObject_t object, TextureShape shape, int x, int y, int z, void* data, std::size_t size,
                    cudaSurfaceBoundaryMode mode, bool write, const char* function) {
    const Object* o = object_of(object, true, function);
    if (!o) return;
    const Resource& r = o->res;
    const bool two_d = shape != kTex1D && shape != kTex1DLayered;
    const long row_bytes = long(r.width * r.texel);
    long bx = x, by = two_d ? y : 0, bz = z;
    const bool inside = bx >= 0 && bx + long(size) <= row_bytes && by >= 0 && by < long(r.height) && bz >= 0 &&
                        bz < long(r.slices);
    if (!inside) {
        if (mode == cudaBoundaryModeZero) {
            if (!write) std::memset(data, 0, size);
            return;
        }
        if (mode == cudaBoundaryModeTrap) {
            if (!tls_view.in_kernel) return;
            device_fault(std::string(function) + " at byte x = " + std::to_string(x) +
                         (two_d ? ", y = " + std::to_string(y) : std::string()) +
                         (shape == kTex3D || shape == kTex1DLayered || shape == kTex2DLayered || shape == kTexCubemap ||
                                  shape == kTexCubemapLayered
                              ? ", layer/face/z = " + std::to_string(z)
                              : std::string()) +
                         " (" + std::to_string(size) + " bytes) is outside the surface (" +
                         std::to_string(r.width) + " elements of " + std::to_string(r.texel) + " bytes" +
                         (two_d ? " x " + std::to_string(r.height) + " rows" : std::string()) +
                         "): x is in bytes (x * sizeof(element)); cudaBoundaryModeTrap makes this a fault");
        }
        bx = std::clamp(bx, 0L, std::max(0L, row_bytes - long(size)));
        by = std::clamp(by, 0L, long(r.height) - 1);
        bz = std::clamp(bz, 0L, long(r.slices) - 1);
    }
    char* p = r.data + size_t(bz) * r.slice_bytes + size_t(by) * r.pitch + size_t(bx);
    if (write) {
        std::memcpy(p, data, size);
    } else {
        std::memcpy(data, p, size);
    }
}

void reset_arrays_and_objects() {
    {
        std::lock_guard<std::mutex> lk(g_arrays_mu);
        for (cudaArray* a : g_arrays) delete a;
        g_arrays.clear();
    }
    std::lock_guard<std::mutex> lk(g_objects_mu);
    for (size_t i = 0; i < g_next_slot; ++i) delete g_objects[i].exchange(nullptr);
    g_free_slots.clear();
    g_next_slot = 0;
}

namespace {

/// The stream check of the asynchronous array copies; cudaSuccess when @p stream is valid.
cudaError_t async_stream(cudaStream_t stream, const char* api) {
    if (valid_stream(stream)) {
        note_stream_work(stream, api, api_site());
        return cudaSuccess;
    }
    if (cudaError_t e = runtime_prologue()) return e;
    return fail(cudaErrorInvalidResourceHandle, api, "the stream is not a valid stream handle");
}

cudaError_t new_object(unsigned long long* handle, const Object& o, const char* api) {
    std::lock_guard<std::mutex> lk(g_objects_mu);
    size_t slot;
    if (!g_free_slots.empty()) {
        slot = g_free_slots.back();
        g_free_slots.pop_back();
    } else if (g_next_slot < kMaxObjects) {
        slot = g_next_slot++;
    } else {
        return fail(cudaErrorMemoryAllocation, api, "more than 65536 texture and surface objects are alive");
    }
    g_objects[slot].store(new Object(o), std::memory_order_release);
    *handle = slot + 1;
    return cudaSuccess;
}

/// Destroys a texture or surface object. Its memory is kept (a kernel still running may read it,
/// and a later fetch through the stale handle must find it dead rather than freed).
cudaError_t destroy_object(unsigned long long handle, bool surface, const char* api) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_objects_mu);
    Object* o = handle >= 1 && handle <= kMaxObjects ? g_objects[handle - 1].load() : nullptr;
    if (handle == 0) return cudaSuccess;
    if (!o || o->surface != surface)
        return fail(cudaErrorInvalidValue, api,
                    std::to_string(handle) + " is not a live " + (surface ? "surface" : "texture") + " object");
    g_objects[handle - 1].store(nullptr, std::memory_order_release);
    g_free_slots.push_back(handle - 1);
    static std::vector<Object*> retired;  // see above
    retired.push_back(o);
    return cudaSuccess;
}

/// The resource of a resource description, checked; the reason it is refused in @p why.
bool read_resource(const cudaResourceDesc& d, Resource& r, std::string& why) {
    switch (d.resType) {
        case cudaResourceTypeArray: {
            const cudaArray* a = d.res.array.array;
            if (!live_array(a)) {
                why = "res.array.array is not a live CUDA array (cudaMallocArray, cudaMalloc3DArray)";
                return false;
            }
            read_format(a->desc, r);
            r.data = a->data, r.width = a->width, r.height = a->height, r.slices = a->slices;
            r.pitch = a->pitch, r.slice_bytes = a->slice_bytes;
            return true;
        }
        case cudaResourceTypeLinear: {
            if (!d.res.linear.devPtr) {
                why = "res.linear.devPtr is NULL";
                return false;
            }
            if ((why = read_format(d.res.linear.desc, r)) != "") return false;
            r.data = static_cast<char*>(d.res.linear.devPtr);
            r.width = d.res.linear.sizeInBytes / r.texel, r.pitch = d.res.linear.sizeInBytes, r.linear = true;
            r.slice_bytes = r.pitch;
            return true;
        }
        case cudaResourceTypePitch2D: {
            if (!d.res.pitch2D.devPtr) {
                why = "res.pitch2D.devPtr is NULL";
                return false;
            }
            if ((why = read_format(d.res.pitch2D.desc, r)) != "") return false;
            if (d.res.pitch2D.pitchInBytes % 32 != 0) {
                why = "res.pitch2D.pitchInBytes " + std::to_string(d.res.pitch2D.pitchInBytes) +
                      " is not a multiple of the device's texturePitchAlignment (32): allocate with cudaMallocPitch";
                return false;
            }
            if (d.res.pitch2D.width * r.texel > d.res.pitch2D.pitchInBytes) {
                why = "res.pitch2D.width elements do not fit in pitchInBytes";
                return false;
            }
            r.data = static_cast<char*>(d.res.pitch2D.devPtr);
            r.width = d.res.pitch2D.width, r.height = d.res.pitch2D.height, r.pitch = d.res.pitch2D.pitchInBytes;
            r.slice_bytes = r.pitch * r.height;
            return true;
        }
        case cudaResourceTypeMipmappedArray:
            why = "mipmapped arrays are not modelled by cusim";
            return false;
    }
    why = "unknown resType " + std::to_string(int(d.resType));
    return false;
}

cudaArray* array_of(cudaArray_const_t a, const char* api, cudaError_t& e) {
    if (!live_array(a)) {
        e = fail(cudaErrorInvalidResourceHandle, api, "the array is not a live CUDA array");
        return nullptr;
    }
    e = cudaSuccess;
    return const_cast<cudaArray*>(a);
}

/// A copy of @p width bytes x @p height rows between an array at (wOffset bytes, hOffset rows)
/// and linear memory, checked against the array's extent.
cudaError_t copy_array_2d(cudaArray* a, size_t wOffset, size_t hOffset, void* mem, size_t mpitch, size_t width,
                          size_t height, cudaMemcpyKind kind, bool to_array, const char* api) {
    if (wOffset + width > a->width * a->texel || hOffset + height > a->height * a->slices)
        return fail(cudaErrorInvalidValue, api,
                    "the copy of " + std::to_string(width) + " bytes x " + std::to_string(height) + " rows at (" +
                        std::to_string(wOffset) + " bytes, row " + std::to_string(hOffset) +
                        ") runs past the array (" + std::to_string(a->width * a->texel) + " bytes x " +
                        std::to_string(a->height) + " rows)");
    char* at = a->data + hOffset * a->pitch + wOffset;
    // The array is device memory: the kind's side for it must say device.
    const bool dev_ok = kind == cudaMemcpyDefault ||
                        (to_array ? (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
                                  : (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice));
    if (!dev_ok)
        return fail(cudaErrorInvalidMemcpyDirection, api,
                    std::string("the kind of copy says the ") + (to_array ? "destination" : "source") +
                        " is host memory, but it is a CUDA array (device memory)");
    return to_array ? copy_2d(at, a->pitch, mem, mpitch, width, height, kind, api)
                    : copy_2d(mem, mpitch, at, a->pitch, width, height, kind, api);
}

/// cudaMemcpyToArray's wrapping copy: @p count bytes from (wOffset, hOffset) on, row by row.
cudaError_t copy_array_linear(cudaArray* a, size_t wOffset, size_t hOffset, void* mem, size_t count,
                              cudaMemcpyKind kind, bool to_array, const char* api) {
    const size_t row = a->width * a->texel, rows = a->height * a->slices;
    if (wOffset >= row && count > 0) return fail(cudaErrorInvalidValue, api, "wOffset is past the end of a row");
    if (hOffset * row + wOffset + count > rows * row)
        return fail(cudaErrorInvalidValue, api,
                    std::to_string(count) + " bytes from (" + std::to_string(wOffset) + " bytes, row " +
                        std::to_string(hOffset) + ") run past the end of the array (" + std::to_string(rows * row) +
                        " bytes)");
    size_t done = 0, w = wOffset, h = hOffset;
    while (done < count) {
        const size_t n = std::min(count - done, row - w);
        char* m = static_cast<char*>(mem) + done;
        if (cudaError_t e = copy_array_2d(a, w, h, m, n, n, 1, kind, to_array, api)) return e;
        done += n, w = 0, ++h;
    }
    return cudaSuccess;
}

}  // namespace
}  // namespace cusim::detail

using namespace cusim::detail;

cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
    return cudaChannelFormatDesc{x, y, z, w, f};
}

cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc* desc, cudaArray_const_t array) {
    if (cudaError_t e = runtime_prologue()) return e;
    cudaError_t e;
    const cudaArray* a = array_of(array, "cudaGetChannelDesc", e);
    if (!a) return e;
    if (!desc) return fail(cudaErrorInvalidValue, "cudaGetChannelDesc", "desc is NULL");
    *desc = a->desc;
    return cudaSuccess;
}

cudaError_t cudaMalloc3DArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, cudaExtent extent,
                              unsigned int flags) {
    const char* api = "cudaMalloc3DArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    if (!array) return fail(cudaErrorInvalidValue, api, "array is NULL");
    *array = nullptr;
    if (!desc) return fail(cudaErrorInvalidValue, api, "desc is NULL");
    Resource r;
    if (std::string why = read_format(*desc, r); !why.empty()) return fail(cudaErrorInvalidValue, api, why);
    if (extent.width == 0) return fail(cudaErrorInvalidValue, api, "extent.width is 0");
    const bool layered = flags & cudaArrayLayered, cubemap = flags & cudaArrayCubemap;
    if (layered && extent.depth == 0)
        return fail(cudaErrorInvalidValue, api, "a layered array needs extent.depth layers (0 given)");
    if (cubemap && (extent.width != extent.height || (!layered && extent.depth != 6) ||
                    (layered && extent.depth % 6 != 0)))
        return fail(cudaErrorInvalidValue, api,
                    "a cubemap array is square (width == height) with depth 6 (a multiple of 6 when layered)");
    if (extent.height == 0 && extent.depth != 0 && !layered)
        return fail(cudaErrorInvalidValue, api, "a 3D array with height 0");
    auto* a = new cudaArray;
    a->desc = *desc, a->extent = extent, a->flags = flags, a->texel = r.texel;
    a->width = extent.width, a->height = std::max<size_t>(extent.height, 1), a->slices = std::max<size_t>(extent.depth, 1);
    a->pitch = a->width * a->texel, a->slice_bytes = a->pitch * a->height;
    void* p = nullptr;
    if (cudaError_t e = device_allocate(&p, a->slice_bytes * a->slices, api)) {
        delete a;
        return e;
    }
    a->data = static_cast<char*>(p);
    {
        std::lock_guard<std::mutex> lk(g_arrays_mu);
        g_arrays.push_back(a);
    }
    *array = a;
    return cudaSuccess;
}

cudaError_t cudaMallocArray(cudaArray_t* array, const cudaChannelFormatDesc* desc, size_t width, size_t height,
                            unsigned int flags) {
    if (flags & (cudaArrayLayered | cudaArrayCubemap)) {
        if (cudaError_t e = runtime_prologue()) return e;
        return fail(cudaErrorInvalidValue, "cudaMallocArray", "layered and cubemap arrays are made with cudaMalloc3DArray");
    }
    return cudaMalloc3DArray(array, desc, make_cudaExtent(width, height, 0), flags);
}

cudaError_t cudaFreeArray(cudaArray_t array) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!array) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lk(g_arrays_mu);
        auto it = std::find(g_arrays.begin(), g_arrays.end(), array);
        if (it == g_arrays.end())
            return fail(cudaErrorInvalidValue, "cudaFreeArray", "the array is not a live CUDA array (freed twice?)");
        g_arrays.erase(it);
    }
    const cudaError_t e = device_release(array->data, "cudaFreeArray");
    delete array;
    return e;
}

cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc* desc, cudaExtent* extent, unsigned int* flags, cudaArray_t array) {
    if (cudaError_t e = runtime_prologue()) return e;
    cudaError_t e;
    const cudaArray* a = array_of(array, "cudaArrayGetInfo", e);
    if (!a) return e;
    if (desc) *desc = a->desc;
    if (extent) *extent = a->extent;
    if (flags) *flags = a->flags;
    return cudaSuccess;
}

cudaError_t cudaMalloc3D(cudaPitchedPtr* pitchedDevPtr, cudaExtent extent) {
    if (!pitchedDevPtr) {
        if (cudaError_t e = runtime_prologue()) return e;
        return fail(cudaErrorInvalidValue, "cudaMalloc3D", "pitchedDevPtr is NULL");
    }
    void* p = nullptr;
    size_t pitch = 0;
    if (cudaError_t e = cudaMallocPitch(&p, &pitch, extent.width, extent.height * std::max<size_t>(extent.depth, 1)))
        return e;
    *pitchedDevPtr = make_cudaPitchedPtr(p, pitch, extent.width, extent.height);
    return cudaSuccess;
}

cudaError_t cudaMemset3D(cudaPitchedPtr p, int value, cudaExtent extent) {
    for (size_t z = 0; z < extent.depth; ++z) {
        char* slice = static_cast<char*>(p.ptr) + z * p.pitch * p.ysize;
        if (cudaError_t e = cudaMemset2D(slice, p.pitch, value, extent.width, extent.height)) return e;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) {
    const char* api = "cudaMemcpy3D";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    if (!p) return fail(cudaErrorInvalidValue, api, "p is NULL");
    if ((p->srcArray != nullptr) == (p->srcPtr.ptr != nullptr) || (p->dstArray != nullptr) == (p->dstPtr.ptr != nullptr))
        return fail(cudaErrorInvalidValue, api, "each side needs exactly one of an array and a pointer");
    // Widths and x positions are in elements when an array is involved, else in bytes.
    const cudaArray* any = p->srcArray ? p->srcArray : p->dstArray;
    if (any && !live_array(any)) return fail(cudaErrorInvalidResourceHandle, api, "the array is not a live CUDA array");
    if (p->srcArray && p->dstArray && !live_array(p->dstArray))
        return fail(cudaErrorInvalidResourceHandle, api, "the destination array is not a live CUDA array");
    const size_t unit = any ? any->texel : 1;
    const size_t width = p->extent.width * unit, height = p->extent.height, depth = p->extent.depth;
    struct Side {
        char* base;
        size_t pitch, slice;
    };
    auto side = [&](cudaArray* a, const cudaPos& pos, const cudaPitchedPtr& ptr, Side& s, const char* which) {
        if (a) {
            if (pos.x + p->extent.width > a->width || pos.y + height > a->height || pos.z + depth > a->slices)
                return fail(cudaErrorInvalidValue, api, std::string("the copy runs past the ") + which + " array");
            s = {a->data + pos.z * a->slice_bytes + pos.y * a->pitch + pos.x * a->texel, a->pitch, a->slice_bytes};
        } else {
            const size_t slice = ptr.pitch * ptr.ysize;
            s = {static_cast<char*>(ptr.ptr) + pos.z * slice + pos.y * ptr.pitch + pos.x * unit, ptr.pitch, slice};
        }
        return cudaSuccess;
    };
    Side src{}, dst{};
    if (cudaError_t e = side(p->srcArray, p->srcPos, p->srcPtr, src, "source")) return e;
    if (cudaError_t e = side(p->dstArray, p->dstPos, p->dstPtr, dst, "destination")) return e;
    for (size_t z = 0; z < depth; ++z) {
        if (cudaError_t e = copy_2d(dst.base + z * dst.slice, dst.pitch, src.base + z * src.slice, src.pitch, width,
                                    height, p->kind, api))
            return e;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
    if (p && capture_operation(stream, cudaGraphNodeTypeMemcpy, "cudaMemcpy3DAsync",
                               [copy = *p](cudaStream_t) { cudaMemcpy3D(&copy); }))
        return cudaSuccess;
    if (cudaError_t e = async_stream(stream, "cudaMemcpy3DAsync")) return e;
    return cudaMemcpy3D(p);
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                size_t width, size_t height, cudaMemcpyKind kind) {
    const char* api = "cudaMemcpy2DToArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(dst, api, e);
    if (!a) return e;
    return copy_array_2d(a, wOffset, hOffset, const_cast<void*>(src), spitch, width, height, kind, true, api);
}

cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
    if (cudaError_t e = async_stream(stream, "cudaMemcpy2DToArrayAsync")) return e;
    return cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind);
}

cudaError_t cudaMemcpy2DFromArray(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, cudaMemcpyKind kind) {
    const char* api = "cudaMemcpy2DFromArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(src, api, e);
    if (!a) return e;
    return copy_array_2d(a, wOffset, hOffset, dst, dpitch, width, height, kind, false, api);
}

cudaError_t cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    if (cudaError_t e = async_stream(stream, "cudaMemcpy2DFromArrayAsync")) return e;
    return cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height, kind);
}

cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     cudaMemcpyKind kind) {
    const char* api = "cudaMemcpy2DArrayToArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    cudaError_t e;
    cudaArray* d = array_of(dst, api, e);
    if (!d) return e;
    cudaArray* s = array_of(src, api, e);
    if (!s) return e;
    if (wOffsetSrc + width > s->width * s->texel || hOffsetSrc + height > s->height * s->slices)
        return fail(cudaErrorInvalidValue, api, "the copy runs past the source array");
    return copy_array_2d(d, wOffsetDst, hOffsetDst, s->data + hOffsetSrc * s->pitch + wOffsetSrc, s->pitch, width,
                         height, kind == cudaMemcpyDefault ? kind : cudaMemcpyDeviceToDevice, true, api);
}

cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                              cudaMemcpyKind kind) {
    const char* api = "cudaMemcpyToArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(dst, api, e);
    if (!a) return e;
    return copy_array_linear(a, wOffset, hOffset, const_cast<void*>(src), count, kind, true, api);
}

cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void* src, size_t count,
                                   cudaMemcpyKind kind, cudaStream_t stream) {
    const char* api = "cudaMemcpyToArrayAsync";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    if (cudaError_t e = async_stream(stream, api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(dst, api, e);
    if (!a) return e;
    return copy_array_linear(a, wOffset, hOffset, const_cast<void*>(src), count, kind, true, api);
}

cudaError_t cudaMemcpyFromArray(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                cudaMemcpyKind kind) {
    const char* api = "cudaMemcpyFromArray";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(src, api, e);
    if (!a) return e;
    return copy_array_linear(a, wOffset, hOffset, dst, count, kind, false, api);
}

cudaError_t cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                                     cudaMemcpyKind kind, cudaStream_t stream) {
    const char* api = "cudaMemcpyFromArrayAsync";
    if (cudaError_t e = runtime_injection_point(api)) return e;
    if (cudaError_t e = async_stream(stream, api)) return e;
    cudaError_t e;
    cudaArray* a = array_of(src, api, e);
    if (!a) return e;
    return copy_array_linear(a, wOffset, hOffset, dst, count, kind, false, api);
}

cudaError_t cudaCreateTextureObject(cudaTextureObject_t* pTexObject, const cudaResourceDesc* pResDesc,
                                    const cudaTextureDesc* pTexDesc, const cudaResourceViewDesc* pResViewDesc) {
    const char* api = "cudaCreateTextureObject";
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pTexObject || !pResDesc || !pTexDesc)
        return fail(cudaErrorInvalidValue, api, "pTexObject, pResDesc or pTexDesc is NULL");
    if (pResViewDesc) return fail(cudaErrorNotSupported, api, "resource views are not modelled by cusim (pass NULL)");
    Object o;
    std::string why;
    if (!read_resource(*pResDesc, o.res, why)) return fail(cudaErrorInvalidValue, api, why);
    o.res_desc = *pResDesc, o.tex_desc = *pTexDesc;
    const bool small_int = o.res.desc.f != cudaChannelFormatKindFloat && o.res.bits < 32;
    if (pTexDesc->readMode == cudaReadModeNormalizedFloat && !small_int && o.res.desc.f != cudaChannelFormatKindFloat)
        return fail(cudaErrorInvalidValue, api,
                    "cudaReadModeNormalizedFloat needs 8- or 16-bit integer channels (32-bit integers read as they are)");
    o.float_result = o.res.desc.f == cudaChannelFormatKindFloat ||
                     (pTexDesc->readMode == cudaReadModeNormalizedFloat && small_int);
    return new_object(pTexObject, o, api);
}

cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) {
    return destroy_object(texObject, false, "cudaDestroyTextureObject");
}

cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc* pResDesc, cudaTextureObject_t texObject) {
    if (cudaError_t e = runtime_prologue()) return e;
    const Object* o = object_of(texObject, false, "cudaGetTextureObjectResourceDesc");
    if (!o || !pResDesc) return fail(cudaErrorInvalidValue, "cudaGetTextureObjectResourceDesc", "not a live texture object");
    *pResDesc = o->res_desc;
    return cudaSuccess;
}

cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc* pTexDesc, cudaTextureObject_t texObject) {
    if (cudaError_t e = runtime_prologue()) return e;
    const Object* o = object_of(texObject, false, "cudaGetTextureObjectTextureDesc");
    if (!o || !pTexDesc) return fail(cudaErrorInvalidValue, "cudaGetTextureObjectTextureDesc", "not a live texture object");
    *pTexDesc = o->tex_desc;
    return cudaSuccess;
}

cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t* pSurfObject, const cudaResourceDesc* pResDesc) {
    const char* api = "cudaCreateSurfaceObject";
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pSurfObject || !pResDesc) return fail(cudaErrorInvalidValue, api, "pSurfObject or pResDesc is NULL");
    if (pResDesc->resType != cudaResourceTypeArray)
        return fail(cudaErrorInvalidValue, api, "a surface reads and writes a CUDA array (resType cudaResourceTypeArray)");
    Object o;
    o.surface = true;
    std::string why;
    if (!read_resource(*pResDesc, o.res, why)) return fail(cudaErrorInvalidValue, api, why);
    if (!(pResDesc->res.array.array->flags & cudaArraySurfaceLoadStore))
        return fail(cudaErrorInvalidValue, api,
                    "the array was not allocated with cudaArraySurfaceLoadStore in its flags, which a surface needs");
    o.res_desc = *pResDesc;
    return new_object(pSurfObject, o, api);
}

cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) {
    return destroy_object(surfObject, true, "cudaDestroySurfaceObject");
}

cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc* pResDesc, cudaSurfaceObject_t surfObject) {
    if (cudaError_t e = runtime_prologue()) return e;
    const Object* o = object_of(surfObject, true, "cudaGetSurfaceObjectResourceDesc");
    if (!o || !pResDesc) return fail(cudaErrorInvalidValue, "cudaGetSurfaceObjectResourceDesc", "not a live surface object");
    *pResDesc = o->res_desc;
    return cudaSuccess;
}
