// CUDA's atomic functions for the cusim backend, with CUDA's overload set (sm_90 and earlier:
// device_atomic_functions.h, sm_20/32/60_atomic_functions.h, sm_70/90_rt.h) and semantics.
//
// Blocks run in parallel on OS threads, so every operation here is a real CPU atomic (GCC
// __atomic builtins, lock-free on x86-64 and AArch64). Floating-point and the 16-bit float
// types use a compare-exchange loop on the value's bit pattern. CUDA only promises relaxed
// ordering; these are sequentially consistent, which is never weaker than a GPU, so a
// simulated run cannot fail where the hardware would pass. The _block and _system scoped
// variants are the same operations (every scope is the whole process here).
//
// The 16-byte atomicCAS/atomicExch templates (sm_90) use a striped spin lock: they are atomic
// with respect to each other, which is all CUDA offers for 16-byte objects.
//
// Not provided, as in CUDA: atomicMin/atomicMax on float and double, atomicSub on 64-bit
// types, atomicAdd on signed 64-bit integers, atomicInc/atomicDec on anything but unsigned int.
// atomicAdd on __half/__half2/__nv_bfloat16/__nv_bfloat162 lives in cuda_fp16.h/cuda_bf16.h.
#pragma once

#include <type_traits>

#include "cusim/vector_types.h"

// In kernel translation units built for cusim analysis, the helpers below (compare-and-swap loops)
// are not instrumented and report each CUDA atomic exactly once; the inline namespace keeps the
// instrumented and plain instantiations apart so the linker never mixes them.
#ifdef __SANITIZE_THREAD__
// The helpers are never inlined, so their return address is the atomic's call site in kernel code
// (reports and per-line metrics name the learner's line, not this header's); the empty asm after
// each call keeps the compiler from turning it into a tail call, whose return address would be the
// kernel's caller.
extern "C" void __cusim_atomic_access(void* address, unsigned long size, void* site);
#define CUSIM_ATOMIC_HELPER __attribute__((no_sanitize_thread, noinline))
#define CUSIM_NOTE_ATOMIC(p) __cusim_atomic_access((void*)(p), sizeof(*(p)), __builtin_return_address(0))
#define CUSIM_AFTER_ATOMIC_CALL() __asm__ volatile("")
#define CUSIM_ATOMIC_NS analyzed
#else
#define CUSIM_ATOMIC_HELPER inline
#define CUSIM_NOTE_ATOMIC(p) static_cast<void>(0)
#define CUSIM_AFTER_ATOMIC_CALL() static_cast<void>(0)
#define CUSIM_ATOMIC_NS plain
#endif

namespace cusim::detail {

constexpr int atomic_order = __ATOMIC_SEQ_CST;

inline namespace CUSIM_ATOMIC_NS {

/// Replaces *p by op(*p) atomically and returns the previous value. The comparison is on the
/// object representation, so NaN payloads and signed zeros behave like any other bit pattern.
template <class T, class Op>
CUSIM_ATOMIC_HELPER T atomic_update_call(T* p, Op op) {
    static_assert(std::is_trivially_copyable_v<T>, "atomic_update needs a trivially copyable type");
    CUSIM_NOTE_ATOMIC(p);
    T old;
    __atomic_load(p, &old, atomic_order);
    T desired = op(old);
    while (!__atomic_compare_exchange(p, &old, &desired, true, atomic_order, atomic_order)) desired = op(old);
    return old;
}

template <class T>
CUSIM_ATOMIC_HELPER T atomic_exchange_call(T* p, T v) {
    CUSIM_NOTE_ATOMIC(p);
    T old;
    __atomic_exchange(p, &v, &old, atomic_order);
    return old;
}

template <class T>
CUSIM_ATOMIC_HELPER T atomic_cas_call(T* p, T compare, T v) {
    CUSIM_NOTE_ATOMIC(p);
    __atomic_compare_exchange_n(p, &compare, v, false, atomic_order, atomic_order);
    return compare;  // holds the previous value whether or not the exchange happened
}

template <class T>
CUSIM_ATOMIC_HELPER T atomic_min_call(T* p, T v) {
    CUSIM_NOTE_ATOMIC(p);
    T old = __atomic_load_n(p, atomic_order);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, atomic_order, atomic_order)) {
    }
    return old;
}

template <class T>
CUSIM_ATOMIC_HELPER T atomic_max_call(T* p, T v) {
    CUSIM_NOTE_ATOMIC(p);
    T old = __atomic_load_n(p, atomic_order);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, atomic_order, atomic_order)) {
    }
    return old;
}


// What CUDA's atomic functions call: the helpers above, never as a tail call.
template <class T, class Op>
inline T atomic_update(T* p, Op op) {
    T old = atomic_update_call(p, op);
    CUSIM_AFTER_ATOMIC_CALL();
    return old;
}
template <class T>
inline T atomic_exchange(T* p, T v) {
    T old = atomic_exchange_call(p, v);
    CUSIM_AFTER_ATOMIC_CALL();
    return old;
}
template <class T>
inline T atomic_cas(T* p, T compare, T v) {
    T old = atomic_cas_call(p, compare, v);
    CUSIM_AFTER_ATOMIC_CALL();
    return old;
}
template <class T>
inline T atomic_min(T* p, T v) {
    T old = atomic_min_call(p, v);
    CUSIM_AFTER_ATOMIC_CALL();
    return old;
}
template <class T>
inline T atomic_max(T* p, T v) {
    T old = atomic_max_call(p, v);
    CUSIM_AFTER_ATOMIC_CALL();
    return old;
}

}  // inline namespace CUSIM_ATOMIC_NS

/// Striped lock guarding 16-byte atomics, one table for every translation unit (scheduler.cpp;
/// out of line, so that this header needs no \<atomic\>, which nvcc's implicit headers lack).
void wide_atomic_lock(const void* p);
void wide_atomic_unlock(const void* p);

struct wide_atomic_guard {
    const void* p;
    explicit wide_atomic_guard(const void* address) : p(address) { wide_atomic_lock(p); }
    ~wide_atomic_guard() { wide_atomic_unlock(p); }
    wide_atomic_guard(const wide_atomic_guard&) = delete;
    wide_atomic_guard& operator=(const wide_atomic_guard&) = delete;
};

}  // namespace cusim::detail

// clang-format off
inline int atomicAdd(int* address, int val) { return __atomic_fetch_add(address, val, cusim::detail::atomic_order); }
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) { return __atomic_fetch_add(address, val, cusim::detail::atomic_order); }
inline unsigned long long int atomicAdd(unsigned long long int* address, unsigned long long int val) { return __atomic_fetch_add(address, val, cusim::detail::atomic_order); }
inline float atomicAdd(float* address, float val) { return cusim::detail::atomic_update(address, [val](float old) { return old + val; }); }
inline double atomicAdd(double* address, double val) { return cusim::detail::atomic_update(address, [val](double old) { return old + val; }); }
/// Vector float adds (sm_90): each component is atomic on its own, as on the GPU.
inline float2 atomicAdd(float2* address, float2 val) { return float2{atomicAdd(&address->x, val.x), atomicAdd(&address->y, val.y)}; }
inline float4 atomicAdd(float4* address, float4 val) {
    return float4{atomicAdd(&address->x, val.x), atomicAdd(&address->y, val.y), atomicAdd(&address->z, val.z), atomicAdd(&address->w, val.w)};
}

inline int atomicSub(int* address, int val) { return __atomic_fetch_sub(address, val, cusim::detail::atomic_order); }
inline unsigned int atomicSub(unsigned int* address, unsigned int val) { return __atomic_fetch_sub(address, val, cusim::detail::atomic_order); }

inline int atomicExch(int* address, int val) { return cusim::detail::atomic_exchange(address, val); }
inline unsigned int atomicExch(unsigned int* address, unsigned int val) { return cusim::detail::atomic_exchange(address, val); }
inline unsigned long long int atomicExch(unsigned long long int* address, unsigned long long int val) { return cusim::detail::atomic_exchange(address, val); }
inline float atomicExch(float* address, float val) { return cusim::detail::atomic_exchange(address, val); }

inline int atomicMin(int* address, int val) { return cusim::detail::atomic_min(address, val); }
inline unsigned int atomicMin(unsigned int* address, unsigned int val) { return cusim::detail::atomic_min(address, val); }
inline long long atomicMin(long long* address, long long val) { return cusim::detail::atomic_min(address, val); }
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long val) { return cusim::detail::atomic_min(address, val); }
inline int atomicMax(int* address, int val) { return cusim::detail::atomic_max(address, val); }
inline unsigned int atomicMax(unsigned int* address, unsigned int val) { return cusim::detail::atomic_max(address, val); }
inline long long atomicMax(long long* address, long long val) { return cusim::detail::atomic_max(address, val); }
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long val) { return cusim::detail::atomic_max(address, val); }

/// Stores ((old >= val) ? 0 : (old + 1)), returns old.
inline unsigned int atomicInc(unsigned int* address, unsigned int val) {
    return cusim::detail::atomic_update(address, [val](unsigned int old) { return old >= val ? 0u : old + 1u; });
}
/// Stores (((old == 0) || (old > val)) ? val : (old - 1)), returns old.
inline unsigned int atomicDec(unsigned int* address, unsigned int val) {
    return cusim::detail::atomic_update(address, [val](unsigned int old) { return (old == 0u || old > val) ? val : old - 1u; });
}

inline int atomicCAS(int* address, int compare, int val) { return cusim::detail::atomic_cas(address, compare, val); }
inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int val) { return cusim::detail::atomic_cas(address, compare, val); }
inline unsigned long long int atomicCAS(unsigned long long int* address, unsigned long long int compare, unsigned long long int val) { return cusim::detail::atomic_cas(address, compare, val); }
inline unsigned short int atomicCAS(unsigned short int* address, unsigned short int compare, unsigned short int val) { return cusim::detail::atomic_cas(address, compare, val); }

inline int atomicAnd(int* address, int val) { return __atomic_fetch_and(address, val, cusim::detail::atomic_order); }
inline unsigned int atomicAnd(unsigned int* address, unsigned int val) { return __atomic_fetch_and(address, val, cusim::detail::atomic_order); }
inline long long atomicAnd(long long* address, long long val) { return __atomic_fetch_and(address, val, cusim::detail::atomic_order); }
inline unsigned long long atomicAnd(unsigned long long* address, unsigned long long val) { return __atomic_fetch_and(address, val, cusim::detail::atomic_order); }
inline int atomicOr(int* address, int val) { return __atomic_fetch_or(address, val, cusim::detail::atomic_order); }
inline unsigned int atomicOr(unsigned int* address, unsigned int val) { return __atomic_fetch_or(address, val, cusim::detail::atomic_order); }
inline long long atomicOr(long long* address, long long val) { return __atomic_fetch_or(address, val, cusim::detail::atomic_order); }
inline unsigned long long atomicOr(unsigned long long* address, unsigned long long val) { return __atomic_fetch_or(address, val, cusim::detail::atomic_order); }
inline int atomicXor(int* address, int val) { return __atomic_fetch_xor(address, val, cusim::detail::atomic_order); }
inline unsigned int atomicXor(unsigned int* address, unsigned int val) { return __atomic_fetch_xor(address, val, cusim::detail::atomic_order); }
inline long long atomicXor(long long* address, long long val) { return __atomic_fetch_xor(address, val, cusim::detail::atomic_order); }
inline unsigned long long atomicXor(unsigned long long* address, unsigned long long val) { return __atomic_fetch_xor(address, val, cusim::detail::atomic_order); }

// Scoped variants (sm_60): the same operations.
#define CUSIM_ATOMIC_SCOPED(RET, NAME, PARAMS, ARGS)        \
    inline RET NAME##_block PARAMS { return NAME ARGS; }  \
    inline RET NAME##_system PARAMS { return NAME ARGS; }
#define CUSIM_ATOMIC_SCOPED_2(RET, NAME, T) CUSIM_ATOMIC_SCOPED(RET, NAME, (T* address, T val), (address, val))
CUSIM_ATOMIC_SCOPED_2(int, atomicAdd, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicAdd, unsigned int)
CUSIM_ATOMIC_SCOPED_2(unsigned long long int, atomicAdd, unsigned long long int)
CUSIM_ATOMIC_SCOPED_2(float, atomicAdd, float)
CUSIM_ATOMIC_SCOPED_2(double, atomicAdd, double)
CUSIM_ATOMIC_SCOPED_2(float2, atomicAdd, float2)
CUSIM_ATOMIC_SCOPED_2(float4, atomicAdd, float4)
CUSIM_ATOMIC_SCOPED_2(int, atomicSub, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicSub, unsigned int)
CUSIM_ATOMIC_SCOPED_2(int, atomicExch, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicExch, unsigned int)
CUSIM_ATOMIC_SCOPED_2(unsigned long long int, atomicExch, unsigned long long int)
CUSIM_ATOMIC_SCOPED_2(float, atomicExch, float)
CUSIM_ATOMIC_SCOPED_2(int, atomicMin, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicMin, unsigned int)
CUSIM_ATOMIC_SCOPED_2(long long, atomicMin, long long)
CUSIM_ATOMIC_SCOPED_2(unsigned long long, atomicMin, unsigned long long)
CUSIM_ATOMIC_SCOPED_2(int, atomicMax, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicMax, unsigned int)
CUSIM_ATOMIC_SCOPED_2(long long, atomicMax, long long)
CUSIM_ATOMIC_SCOPED_2(unsigned long long, atomicMax, unsigned long long)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicInc, unsigned int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicDec, unsigned int)
CUSIM_ATOMIC_SCOPED_2(int, atomicAnd, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicAnd, unsigned int)
CUSIM_ATOMIC_SCOPED_2(long long, atomicAnd, long long)
CUSIM_ATOMIC_SCOPED_2(unsigned long long, atomicAnd, unsigned long long)
CUSIM_ATOMIC_SCOPED_2(int, atomicOr, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicOr, unsigned int)
CUSIM_ATOMIC_SCOPED_2(long long, atomicOr, long long)
CUSIM_ATOMIC_SCOPED_2(unsigned long long, atomicOr, unsigned long long)
CUSIM_ATOMIC_SCOPED_2(int, atomicXor, int)
CUSIM_ATOMIC_SCOPED_2(unsigned int, atomicXor, unsigned int)
CUSIM_ATOMIC_SCOPED_2(long long, atomicXor, long long)
CUSIM_ATOMIC_SCOPED_2(unsigned long long, atomicXor, unsigned long long)
CUSIM_ATOMIC_SCOPED(int, atomicCAS, (int* address, int compare, int val), (address, compare, val))
CUSIM_ATOMIC_SCOPED(unsigned int, atomicCAS, (unsigned int* address, unsigned int compare, unsigned int val), (address, compare, val))
CUSIM_ATOMIC_SCOPED(unsigned long long int, atomicCAS, (unsigned long long int* address, unsigned long long int compare, unsigned long long int val), (address, compare, val))
CUSIM_ATOMIC_SCOPED(unsigned short int, atomicCAS, (unsigned short int* address, unsigned short int compare, unsigned short int val), (address, compare, val))
#undef CUSIM_ATOMIC_SCOPED_2
#undef CUSIM_ATOMIC_SCOPED
// clang-format on

#ifndef __NV_DISABLE_128_ATOMICS
// 16-byte atomicCAS / atomicExch (sm_90) for any trivially copyable 16-byte, 16-aligned type.
template <class T>
concept cusim_wide_atomic_type = sizeof(T) == 16 && alignof(T) >= 16 && std::is_trivially_copyable_v<T>;

template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicCAS(T* address, T compare, T val) {
    cusim::detail::wide_atomic_guard guard(address);
    T old;
    __builtin_memcpy(&old, address, sizeof(T));
    if (__builtin_memcmp(&old, &compare, sizeof(T)) == 0) __builtin_memcpy(address, &val, sizeof(T));
    return old;
}

template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicExch(T* address, T val) {
    cusim::detail::wide_atomic_guard guard(address);
    T old;
    __builtin_memcpy(&old, address, sizeof(T));
    __builtin_memcpy(address, &val, sizeof(T));
    return old;
}

template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicCAS_block(T* address, T compare, T val) { return atomicCAS(address, compare, val); }
template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicCAS_system(T* address, T compare, T val) { return atomicCAS(address, compare, val); }
template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicExch_block(T* address, T val) { return atomicExch(address, val); }
template <class T>
    requires cusim_wide_atomic_type<T>
inline T atomicExch_system(T* address, T val) { return atomicExch(address, val); }
#endif
