// CUDA's built-in vector types (char1..double4, uint3, dim3) and their make_* helpers for the
// cusim backend. Layout, member types and alignment follow CUDA's vector_types.h on 64-bit Linux,
// so a float4 load, a reinterpret_cast to int4 or a sizeof in lab code means the same on both
// backends. The types stay aggregates: `float2 v{1.f, 2.f};` works as with nvcc.
//
// CUDA 13 deprecates long4/ulong4/longlong4/ulonglong4/double4 in favour of the *_16a / *_32a
// spellings; all of them are provided here (the plain ones 16-byte aligned, as in CUDA).
#pragma once
#include <cstddef>

// char1..char4
struct char1 {
    signed char x;
};
struct alignas(2) char2 {
    signed char x, y;
};
struct char3 {
    signed char x, y, z;
};
struct alignas(4) char4 {
    signed char x, y, z, w;
};

// uchar1..uchar4
struct uchar1 {
    unsigned char x;
};
struct alignas(2) uchar2 {
    unsigned char x, y;
};
struct uchar3 {
    unsigned char x, y, z;
};
struct alignas(4) uchar4 {
    unsigned char x, y, z, w;
};

// short1..short4
struct short1 {
    short x;
};
struct alignas(4) short2 {
    short x, y;
};
struct short3 {
    short x, y, z;
};
struct alignas(8) short4 {
    short x, y, z, w;
};

// ushort1..ushort4
struct ushort1 {
    unsigned short x;
};
struct alignas(4) ushort2 {
    unsigned short x, y;
};
struct ushort3 {
    unsigned short x, y, z;
};
struct alignas(8) ushort4 {
    unsigned short x, y, z, w;
};

// int1..int4
struct int1 {
    int x;
};
struct alignas(8) int2 {
    int x, y;
};
struct int3 {
    int x, y, z;
};
struct alignas(16) int4 {
    int x, y, z, w;
};

// uint1..uint4
struct uint1 {
    unsigned int x;
};
struct alignas(8) uint2 {
    unsigned int x, y;
};
struct uint3 {
    unsigned int x, y, z;
};
struct alignas(16) uint4 {
    unsigned int x, y, z, w;
};

// long1..long4
struct long1 {
    long int x;
};
struct alignas(2 * sizeof(long int)) long2 {
    long int x, y;
};
struct long3 {
    long int x, y, z;
};
struct alignas(16) long4 {
    long int x, y, z, w;
};
struct alignas(16) long4_16a {
    long int x, y, z, w;
};
struct alignas(32) long4_32a {
    long int x, y, z, w;
};

// ulong1..ulong4
struct ulong1 {
    unsigned long int x;
};
struct alignas(2 * sizeof(unsigned long int)) ulong2 {
    unsigned long int x, y;
};
struct ulong3 {
    unsigned long int x, y, z;
};
struct alignas(16) ulong4 {
    unsigned long int x, y, z, w;
};
struct alignas(16) ulong4_16a {
    unsigned long int x, y, z, w;
};
struct alignas(32) ulong4_32a {
    unsigned long int x, y, z, w;
};

// longlong1..longlong4
struct longlong1 {
    long long int x;
};
struct alignas(16) longlong2 {
    long long int x, y;
};
struct longlong3 {
    long long int x, y, z;
};
struct alignas(16) longlong4 {
    long long int x, y, z, w;
};
struct alignas(16) longlong4_16a {
    long long int x, y, z, w;
};
struct alignas(32) longlong4_32a {
    long long int x, y, z, w;
};

// ulonglong1..ulonglong4
struct ulonglong1 {
    unsigned long long int x;
};
struct alignas(16) ulonglong2 {
    unsigned long long int x, y;
};
struct ulonglong3 {
    unsigned long long int x, y, z;
};
struct alignas(16) ulonglong4 {
    unsigned long long int x, y, z, w;
};
struct alignas(16) ulonglong4_16a {
    unsigned long long int x, y, z, w;
};
struct alignas(32) ulonglong4_32a {
    unsigned long long int x, y, z, w;
};

// float1..float4
struct float1 {
    float x;
};
struct alignas(8) float2 {
    float x, y;
};
struct float3 {
    float x, y, z;
};
struct alignas(16) float4 {
    float x, y, z, w;
};

// double1..double4
struct double1 {
    double x;
};
struct alignas(16) double2 {
    double x, y;
};
struct double3 {
    double x, y, z;
};
struct alignas(16) double4 {
    double x, y, z, w;
};
struct alignas(16) double4_16a {
    double x, y, z, w;
};
struct alignas(32) double4_32a {
    double x, y, z, w;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// make_<type>(...) as in CUDA's vector_functions.h.
inline char1 make_char1(signed char x) { return char1{x}; }
inline char2 make_char2(signed char x, signed char y) { return char2{x, y}; }
inline char3 make_char3(signed char x, signed char y, signed char z) { return char3{x, y, z}; }
inline char4 make_char4(signed char x, signed char y, signed char z, signed char w) { return char4{x, y, z, w}; }
inline uchar1 make_uchar1(unsigned char x) { return uchar1{x}; }
inline uchar2 make_uchar2(unsigned char x, unsigned char y) { return uchar2{x, y}; }
inline uchar3 make_uchar3(unsigned char x, unsigned char y, unsigned char z) { return uchar3{x, y, z}; }
inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { return uchar4{x, y, z, w}; }
inline short1 make_short1(short x) { return short1{x}; }
inline short2 make_short2(short x, short y) { return short2{x, y}; }
inline short3 make_short3(short x, short y, short z) { return short3{x, y, z}; }
inline short4 make_short4(short x, short y, short z, short w) { return short4{x, y, z, w}; }
inline ushort1 make_ushort1(unsigned short x) { return ushort1{x}; }
inline ushort2 make_ushort2(unsigned short x, unsigned short y) { return ushort2{x, y}; }
inline ushort3 make_ushort3(unsigned short x, unsigned short y, unsigned short z) { return ushort3{x, y, z}; }
inline ushort4 make_ushort4(unsigned short x, unsigned short y, unsigned short z, unsigned short w) { return ushort4{x, y, z, w}; }
inline int1 make_int1(int x) { return int1{x}; }
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
inline uint1 make_uint1(unsigned int x) { return uint1{x}; }
inline uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return uint4{x, y, z, w}; }
inline long1 make_long1(long int x) { return long1{x}; }
inline long2 make_long2(long int x, long int y) { return long2{x, y}; }
inline long3 make_long3(long int x, long int y, long int z) { return long3{x, y, z}; }
inline long4 make_long4(long int x, long int y, long int z, long int w) { return long4{x, y, z, w}; }
inline long4_16a make_long4_16a(long int x, long int y, long int z, long int w) { return long4_16a{x, y, z, w}; }
inline long4_32a make_long4_32a(long int x, long int y, long int z, long int w) { return long4_32a{x, y, z, w}; }
inline ulong1 make_ulong1(unsigned long int x) { return ulong1{x}; }
inline ulong2 make_ulong2(unsigned long int x, unsigned long int y) { return ulong2{x, y}; }
inline ulong3 make_ulong3(unsigned long int x, unsigned long int y, unsigned long int z) { return ulong3{x, y, z}; }
inline ulong4 make_ulong4(unsigned long int x, unsigned long int y, unsigned long int z, unsigned long int w) { return ulong4{x, y, z, w}; }
inline ulong4_16a make_ulong4_16a(unsigned long int x, unsigned long int y, unsigned long int z, unsigned long int w) { return ulong4_16a{x, y, z, w}; }
inline ulong4_32a make_ulong4_32a(unsigned long int x, unsigned long int y, unsigned long int z, unsigned long int w) { return ulong4_32a{x, y, z, w}; }
inline longlong1 make_longlong1(long long int x) { return longlong1{x}; }
inline longlong2 make_longlong2(long long int x, long long int y) { return longlong2{x, y}; }
inline longlong3 make_longlong3(long long int x, long long int y, long long int z) { return longlong3{x, y, z}; }
inline longlong4 make_longlong4(long long int x, long long int y, long long int z, long long int w) { return longlong4{x, y, z, w}; }
inline longlong4_16a make_longlong4_16a(long long int x, long long int y, long long int z, long long int w) { return longlong4_16a{x, y, z, w}; }
inline longlong4_32a make_longlong4_32a(long long int x, long long int y, long long int z, long long int w) { return longlong4_32a{x, y, z, w}; }
inline ulonglong1 make_ulonglong1(unsigned long long int x) { return ulonglong1{x}; }
inline ulonglong2 make_ulonglong2(unsigned long long int x, unsigned long long int y) { return ulonglong2{x, y}; }
inline ulonglong3 make_ulonglong3(unsigned long long int x, unsigned long long int y, unsigned long long int z) { return ulonglong3{x, y, z}; }
inline ulonglong4 make_ulonglong4(unsigned long long int x, unsigned long long int y, unsigned long long int z, unsigned long long int w) { return ulonglong4{x, y, z, w}; }
inline ulonglong4_16a make_ulonglong4_16a(unsigned long long int x, unsigned long long int y, unsigned long long int z, unsigned long long int w) { return ulonglong4_16a{x, y, z, w}; }
inline ulonglong4_32a make_ulonglong4_32a(unsigned long long int x, unsigned long long int y, unsigned long long int z, unsigned long long int w) { return ulonglong4_32a{x, y, z, w}; }
inline float1 make_float1(float x) { return float1{x}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline double1 make_double1(double x) { return double1{x}; }
inline double2 make_double2(double x, double y) { return double2{x, y}; }
inline double3 make_double3(double x, double y, double z) { return double3{x, y, z}; }
inline double4 make_double4(double x, double y, double z, double w) { return double4{x, y, z, w}; }
inline double4_16a make_double4_16a(double x, double y, double z, double w) { return double4_16a{x, y, z, w}; }
inline double4_32a make_double4_32a(double x, double y, double z, double w) { return double4_32a{x, y, z, w}; }
