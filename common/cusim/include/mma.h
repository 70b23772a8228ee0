// CUDA's <mma.h> for the cusim backend: the warp matrix functions of nvcuda::wmma (tensor cores).
//
// Fragments, fill_fragment, load_matrix_sync, store_matrix_sync and mma_sync with CUDA's shapes,
// element types and per-lane element counts (num_elements):
//   m16n16k16, m32n8k16, m8n32k16  __half, __nv_bfloat16 (accumulator float; __half for __half
//                                  inputs), signed and unsigned char (accumulator int)
//   m16n16k8                       precision::tf32 (accumulator float), with __float_to_tf32
//   m8n8k4                         double
// Sub-byte types (experimental::precision::u4, s4, b1) and bmma_sync are not provided; a fragment
// that does not exist in CUDA stops the build with a static_assert naming the supported set.
//
// Semantics as CUDA states them:
// - load_matrix_sync, store_matrix_sync and mma_sync are warp-collective: every one of the 32 lanes
//   of the warp must call the same function with the same pointer, ldm and layout. A lane that is
//   missing (divergence, an exited lane, a warp with fewer than 32 threads) or lanes that pass
//   different arguments end the kernel with a warp synchronization error naming the call, as a
//   divergent shuffle does. The pointer must be 128-bit (16-byte) aligned and ldm a multiple of 16
//   bytes (cudaErrorMisalignedAddress otherwise). The Programming Guide asks for 256 bits; GPUs load
//   16-byte aligned tiles, and NVIDIA's immaTensorCoreGemm does so (conformance wmma_alignment).
// - Which matrix elements a lane holds is unspecified in CUDA; cusim's mapping: a lane holds
//   E/32 distinct elements in runs of up to 16 bytes (4 elements for every accumulator type) that
//   are consecutive in the fragment's memory order (row-major for row_major fragments and
//   accumulators, column-major for col_major); the warp's q-th runs form one contiguous stretch,
//   so one vector access per lane and run covers it, as the hardware's fragment loads do.
//   Fragments whose num_elements exceeds E/32 hold each element num_elements*32/E times (as
//   CUDA's m16n16k16 __half fragments do). Elementwise loops over x[0..num_elements), also between
//   accumulators of different element types, therefore work as on the GPU; code that relies on
//   NVIDIA's private mapping (which row a lane holds) does not.
// - The lanes' loads and stores are ordinary per-lane memory accesses after the warp has
//   arrived, so the analysis tools see them: memcheck, racecheck and initcheck apply, and metrics
//   count each as the global or shared requests it makes. Like __syncwarp, arrival orders memory
//   between the lanes of the warp; nothing orders a store_matrix_sync before another lane's later
//   plain read (use __syncwarp, as on the GPU).
// - mma_sync computes each element of D = A*B + C as the exact products summed in double precision
//   (IEEE fma in order for double fragments) and rounds once to the accumulator type; tf32 inputs
//   keep their upper 19 bits, as the hardware reads them. The GPU rounds inside the sum, so its
//   results may differ in the last bits; checks compare with a tolerance.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "cusim/device.h"

namespace nvcuda {
namespace wmma {

struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;

enum layout_t { mem_row_major, mem_col_major };

namespace precision {
struct tf32;
}

namespace experimental {
namespace precision {
struct u4;
struct s4;
struct b1;
}  // namespace precision
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}  // namespace experimental

template <class T>
struct helper_traits {
    typedef T element_type;
    typedef T storage_element_type;
    typedef T fill_argument_type;
};
template <>
struct helper_traits<precision::tf32> {
    typedef precision::tf32 element_type;
    typedef float storage_element_type;
    typedef float fill_argument_type;
};

template <class T, int size, int packed_size = size>
struct __frag_base {
    enum { num_elements = size };
    enum { num_storage_elements = packed_size };
    typedef T element_type;
    typedef typename helper_traits<T>::storage_element_type storage_element_type;
    storage_element_type x[num_storage_elements];
};

/// tf32 rounding of a float (round to nearest, ties away from zero, as cvt.rna.tf32.f32): the
/// result is a float whose low 13 mantissa bits are zero.
inline float __float_to_tf32(float in) {
    uint32_t u;
    std::memcpy(&u, &in, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // finite: round
    float r;
    std::memcpy(&r, &u, 4);
    return r;
}

template <class FragEleType, int size, int packed_size>
inline void fill_fragment(__frag_base<FragEleType, size, packed_size>& f,
                          const typename helper_traits<FragEleType>::fill_argument_type& in) {
    for (int i = 0; i < f.num_storage_elements; i++) f.x[i] = in;
}

}  // namespace wmma
}  // namespace nvcuda

namespace cusim::wmma_detail {

namespace w = nvcuda::wmma;

// Rows and columns of the matrix a fragment holds: A is m x k, B is k x n, C and D are m x n.
template <class Use, int m, int n, int k>
struct dims;
template <int m, int n, int k>
struct dims<w::matrix_a, m, n, k> {
    static constexpr int rows = m, cols = k;
};
template <int m, int n, int k>
struct dims<w::matrix_b, m, n, k> {
    static constexpr int rows = k, cols = n;
};
template <int m, int n, int k>
struct dims<w::accumulator, m, n, k> {
    static constexpr int rows = m, cols = n;
};

template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <class T>
constexpr bool is_int8 = std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>;

// num_elements of CUDA's fragment<Use, m, n, k, T>, 0 where CUDA has no such fragment.
template <class Use, int m, int n, int k, class T>
constexpr int frag_elements() {
    constexpr bool a = std::is_same_v<Use, w::matrix_a>, b = std::is_same_v<Use, w::matrix_b>;
    constexpr bool acc = std::is_same_v<Use, w::accumulator>;
    constexpr bool k16 = (m == 16 && n == 16 && k == 16) || (m == 32 && n == 8 && k == 16) || (m == 8 && n == 32 && k == 16);
    if constexpr (k16) {
        if constexpr (acc) return (std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, int>) ? 8 : 0;
        if constexpr (std::is_same_v<T, __half>) return (a || b) ? 16 : 0;
        if constexpr (std::is_same_v<T, __nv_bfloat16> || is_int8<T>) {
            if constexpr (m == 16) return 8;
            if constexpr (m == 32) return a ? 16 : 4;
            return a ? 4 : 16;
        }
        return 0;
    } else if constexpr (m == 16 && n == 16 && k == 8) {
        if constexpr (acc) return std::is_same_v<T, float> ? 8 : 0;
        return std::is_same_v<T, w::precision::tf32> ? 4 : 0;
    } else if constexpr (m == 8 && n == 8 && k == 4) {
        if constexpr (!std::is_same_v<T, double>) return 0;
        return acc ? 2 : 1;
    }
    return 0;
}

template <class Use, int m, int n, int k, class T, class Layout>
constexpr bool frag_valid() {
    constexpr bool acc = std::is_same_v<Use, w::accumulator>;
    constexpr bool layout_ok = acc ? std::is_void_v<Layout>
                                   : (std::is_same_v<Layout, w::row_major> || std::is_same_v<Layout, w::col_major>);
    return layout_ok && frag_elements<Use, m, n, k, T>() > 0;
}

// Storage value -> the value the tensor core multiplies (double), and back.
template <class Elem, class S>
inline double to_double(S v) {
    if constexpr (std::is_same_v<Elem, w::precision::tf32>) {  // the hardware ignores the low 13 bits
        uint32_t u;
        std::memcpy(&u, &v, 4);
        u &= 0xffffe000u;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    } else if constexpr (is_16bit_float<S>) {
        return static_cast<double>(static_cast<float>(v));
    } else {
        return static_cast<double>(v);
    }
}

template <class Acc>
inline Acc from_double(double v, bool satf) {
    if constexpr (std::is_same_v<Acc, int>) {
        if (satf) return v > 2147483647.0 ? 2147483647 : v < -2147483648.0 ? static_cast<int>(-2147483647 - 1) : static_cast<int>(v);
        return static_cast<int>(static_cast<uint32_t>(static_cast<int64_t>(v)));  // wraps, as integer adds do
    } else {
        if (satf) {  // CUDA's satf: NaN becomes 0, infinities the largest finite value
            if (v != v) v = 0;
            const double top = std::is_same_v<Acc, __half> ? 65504.0 : std::is_same_v<Acc, float> ? 3.4028234663852886e38 : 1.7976931348623157e308;
            if (v > top) v = top;
            if (v < -top) v = -top;
        }
        if constexpr (std::is_same_v<Acc, __half>) return __double2half(v);
        else return static_cast<Acc>(v);
    }
}

// Elements per vector access of a lane: up to 16 bytes of its E/32 elements for matrix_a and
// matrix_b; four for every accumulator type, so that accumulators of different element types map
// elements to lanes alike (elementwise conversion between them works, as on the GPU).
template <class Use, class S, int per_lane>
constexpr int vector_elements() {
    if constexpr (std::is_same_v<Use, w::accumulator>) return per_lane < 4 ? per_lane : 4;
    return per_lane * static_cast<int>(sizeof(S)) <= 16 ? per_lane : 16 / static_cast<int>(sizeof(S));
}

// Where element j (< E/32) of lane `lane` lies in the fragment's matrix. The lane's elements are
// runs of `vec` consecutive elements in memory order, run q of every lane forming one 32 * vec
// element stretch, so the warp's q-th vector access covers a contiguous part of the tile.
template <int rows, int cols, bool col_order, int vec>
__attribute__((always_inline)) constexpr void owner(int lane, int j, int& r, int& c) {
    const int e = (j / vec) * (32 * vec) + lane * vec + j % vec;
    if constexpr (col_order) {
        c = e / rows;
        r = e % rows;
    } else {
        r = e / cols;
        c = e % cols;
    }
}

typedef unsigned __int128 u128 __attribute__((may_alias, aligned(16)));
typedef uint64_t u64 __attribute__((may_alias, aligned(8)));
typedef uint32_t u32 __attribute__((may_alias, aligned(4)));
typedef uint16_t u16 __attribute__((may_alias, aligned(2)));
typedef uint8_t u8 __attribute__((may_alias));

// One lane's contiguous run of `bytes` bytes, in the widest aligned accesses of up to 16 bytes (as
// the vector loads and stores the hardware's fragment loads use).
__attribute__((always_inline)) inline void copy_run(void* dst, const void* src, int bytes) {
    auto* d = static_cast<unsigned char*>(dst);
    auto* s = static_cast<const unsigned char*>(src);
    while (bytes > 0) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(d);
        if (bytes >= 16 && !(a & 15)) {
            *reinterpret_cast<u128*>(d) = *reinterpret_cast<const u128*>(s);
            d += 16, s += 16, bytes -= 16;
        } else if (bytes >= 8 && !(a & 7)) {
            *reinterpret_cast<u64*>(d) = *reinterpret_cast<const u64*>(s);
            d += 8, s += 8, bytes -= 8;
        } else if (bytes >= 4 && !(a & 3)) {
            *reinterpret_cast<u32*>(d) = *reinterpret_cast<const u32*>(s);
            d += 4, s += 4, bytes -= 4;
        } else if (bytes >= 2 && !(a & 1)) {
            *reinterpret_cast<u16*>(d) = *reinterpret_cast<const u16*>(s);
            d += 2, s += 2, bytes -= 2;
        } else {
            *reinterpret_cast<u8*>(d) = *reinterpret_cast<const u8*>(s);
            d += 1, s += 1, bytes -= 1;
        }
    }
}

__attribute__((always_inline)) inline void check_alignment(const char* function, const void* p, unsigned ldm, unsigned element_bytes,
                            const site& where) {
    if ((reinterpret_cast<uintptr_t>(p) & 15u) || (static_cast<uint64_t>(ldm) * element_bytes) % 16u)
        detail::wmma_misaligned(function, p, ldm, element_bytes, where);
}

__attribute__((always_inline)) inline void arrive(detail::WarpOpKind kind, detail::WmmaLane& lane, const site& where) {
    detail::warp_collective(kind, 0xffffffffu, reinterpret_cast<uint64_t>(&lane), 0, 32, where);
}

// Loads (or stores) the calling lane's part of a rows x cols matrix at p; col_order: the lane's
// elements follow the matrix's column-major order; col_memory: memory is column-major.
template <class Use, int rows, int cols, int num, bool col_order, class S>
__attribute__((always_inline)) inline void lane_transfer(S* x, S* p, unsigned ldm, bool col_memory, bool store) {
    constexpr int per_lane = rows * cols / 32;
    constexpr int vec = vector_elements<Use, S, per_lane>();
    const int lane = static_cast<int>(detail::lane_id());
    // Elements j .. j + count - 1 of the lane, which start at (r, c) and are contiguous in memory.
    auto move = [&](int j, int count) __attribute__((always_inline)) {
        int r, c;
        owner<rows, cols, col_order, vec>(lane, j, r, c);
        S* at = col_memory ? p + static_cast<size_t>(c) * ldm + r : p + static_cast<size_t>(r) * ldm + c;
        if (store) copy_run(at, &x[j], count * static_cast<int>(sizeof(S)));
        else copy_run(&x[j], at, count * static_cast<int>(sizeof(S)));
    };
    for (int j0 = 0; j0 < per_lane; j0 += vec) {
        if (col_memory == col_order) {  // the run is contiguous in memory: one vector access
            move(j0, vec);
            continue;
        }
        for (int j = j0; j < j0 + vec; ++j) move(j, 1);
    }
    if (!store)
        for (int j = per_lane; j < num; ++j) x[j] = x[j % per_lane];  // duplicated elements
}

// Where each lane's elements lie in a rows x cols matrix (row-major index r * cols + c), lane by
// lane: at[l * per_lane + j] is element j of lane l. One table per fragment shape, made at compile time.
template <int rows, int cols, bool col_order, int vec>
struct OwnerTable {
    static constexpr int per_lane = rows * cols / 32;
    int at[rows * cols] = {};
    constexpr OwnerTable() {
        for (int l = 0; l < 32; ++l) {
            for (int j = 0; j < per_lane; ++j) {
                int r = 0, c = 0;
                owner<rows, cols, col_order, vec>(l, j, r, c);
                at[l * per_lane + j] = r * cols + c;
            }
        }
    }
};
template <int rows, int cols, bool col_order, int vec>
inline constexpr OwnerTable<rows, cols, col_order, vec> owner_table{};

// D = A * B + C for the warp, from the 32 lanes' fragments: the matrices are gathered once, each
// row of D is summed over k in order (so every element is the exact products added in order q = 0
// .. k - 1, then C; the products of 16-bit, tf32 and 8-bit inputs are exact in double), and the
// result is rounded once per element into each lane's accumulator.
template <class FD, class FA, class FB, class FC, int m, int n, int k>
void mma_compute(detail::WmmaLane* const* lanes) {
    using EA = typename FA::element_type;
    using EB = typename FB::element_type;
    using Acc = typename FD::element_type;
    constexpr bool a_col = std::is_same_v<typename FA::layout, w::col_major>;
    constexpr bool b_col = std::is_same_v<typename FB::layout, w::col_major>;
    constexpr int pa = m * k / 32, pb = k * n / 32, pc = m * n / 32;
    constexpr const auto& ta = owner_table<m, k, a_col, vector_elements<w::matrix_a, typename FA::storage_element_type, pa>()>;
    constexpr const auto& tb = owner_table<k, n, b_col, vector_elements<w::matrix_b, typename FB::storage_element_type, pb>()>;
    constexpr const auto& tc = owner_table<m, n, false, vector_elements<w::accumulator, typename FC::storage_element_type, pc>()>;
    constexpr const auto& td = owner_table<m, n, false, vector_elements<w::accumulator, typename FD::storage_element_type, pc>()>;
    double A[m * k], B[k * n], C[m * n], D[m * n];
    for (int l = 0; l < 32; ++l) {
        const auto& fa = *static_cast<const FA*>(lanes[l]->a);
        const auto& fb = *static_cast<const FB*>(lanes[l]->b);
        const auto& fc = *static_cast<const FC*>(lanes[l]->c);
        for (int j = 0; j < pa; ++j) A[ta.at[l * pa + j]] = to_double<EA>(fa.x[j]);
        for (int j = 0; j < pb; ++j) B[tb.at[l * pb + j]] = to_double<EB>(fb.x[j]);
        for (int j = 0; j < pc; ++j) C[tc.at[l * pc + j]] = to_double<typename FC::element_type>(fc.x[j]);
    }
    for (int r = 0; r < m; ++r) {
        double* s = &D[r * n];
        if constexpr (std::is_same_v<Acc, double>) {  // IEEE fma in order, from C
            for (int c = 0; c < n; ++c) s[c] = C[r * n + c];
            for (int q = 0; q < k; ++q) {
                const double a = A[r * k + q];
                for (int c = 0; c < n; ++c) s[c] = __builtin_fma(a, B[q * n + c], s[c]);
            }
        } else {
            for (int c = 0; c < n; ++c) s[c] = 0;
            for (int q = 0; q < k; ++q) {
                const double a = A[r * k + q];
                for (int c = 0; c < n; ++c) s[c] += a * B[q * n + c];
            }
            for (int c = 0; c < n; ++c) s[c] += C[r * n + c];
        }
    }
    const bool satf = lanes[0]->satf;
    for (int l = 0; l < 32; ++l) {
        auto& fd = *static_cast<FD*>(lanes[l]->d);
        for (int j = 0; j < pc; ++j) fd.x[j] = from_double<Acc>(D[td.at[l * pc + j]], satf);
        for (int j = pc; j < FD::num_elements; ++j) fd.x[j] = fd.x[j % pc];
    }
}

}  // namespace cusim::wmma_detail

namespace nvcuda {
namespace wmma {

// A fragment CUDA does not have gets a placeholder base, so the static_assert below is the error.
template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment
    : public std::conditional_t<cusim::wmma_detail::frag_valid<Use, m, n, k, T, Layout>(),
                                __frag_base<T, cusim::wmma_detail::frag_elements<Use, m, n, k, T>()>,
                                __frag_base<float, 1>> {
    static_assert(cusim::wmma_detail::frag_valid<Use, m, n, k, T, Layout>(),
                  "cusim: no such nvcuda::wmma fragment. Supported: shapes m16n16k16, m32n8k16 and m8n32k16 "
                  "with __half, __nv_bfloat16, signed or unsigned char (accumulator float or __half, or int); "
                  "m16n16k8 with precision::tf32 (accumulator float); m8n8k4 with double. matrix_a and "
                  "matrix_b take a row_major or col_major layout, accumulators none. Sub-byte types and "
                  "bmma_sync are not supported on the sim backend.");

public:
    using use = Use;
    using layout = Layout;
    static constexpr int rows = cusim::wmma_detail::dims<Use, m, n, k>::rows;
    static constexpr int cols = cusim::wmma_detail::dims<Use, m, n, k>::cols;
};

template <class Use, int m, int n, int k, class T, class Layout>
__attribute__((always_inline)) inline void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& a,
                             const typename helper_traits<T>::storage_element_type* p, unsigned ldm,
                             const cusim::site& where = cusim::site::current()) {
    static_assert(!std::is_same_v<Use, accumulator>,
                  "load_matrix_sync of an accumulator fragment takes a layout (mem_row_major or mem_col_major)");
    using F = fragment<Use, m, n, k, T, Layout>;
    using S = typename F::storage_element_type;
    cusim::wmma_detail::check_alignment("nvcuda::wmma::load_matrix_sync", p, ldm, sizeof(S), where);
    cusim::detail::WmmaLane lane;
    lane.ptr = p;
    lane.ldm = ldm;
    cusim::wmma_detail::arrive(cusim::detail::WarpOpKind::WmmaLoad, lane, where);
    constexpr bool col = std::is_same_v<Layout, col_major>;
    cusim::wmma_detail::lane_transfer<Use, F::rows, F::cols, F::num_elements, col>(a.x, const_cast<S*>(p), ldm, col,
                                                                              false);
}

template <int m, int n, int k, class T>
__attribute__((always_inline)) inline void load_matrix_sync(fragment<accumulator, m, n, k, T>& a, const T* p, unsigned ldm, layout_t layout,
                             const cusim::site& where = cusim::site::current()) {
    using F = fragment<accumulator, m, n, k, T>;
    cusim::wmma_detail::check_alignment("nvcuda::wmma::load_matrix_sync", p, ldm, sizeof(T), where);
    cusim::detail::WmmaLane lane;
    lane.ptr = p;
    lane.ldm = ldm;
    lane.layout = layout;
    cusim::wmma_detail::arrive(cusim::detail::WarpOpKind::WmmaLoad, lane, where);
    cusim::wmma_detail::lane_transfer<accumulator, F::rows, F::cols, F::num_elements, false>(
        a.x, const_cast<T*>(p), ldm, layout == mem_col_major, false);
}

template <int m, int n, int k, class T>
__attribute__((always_inline)) inline void store_matrix_sync(T* p, const fragment<accumulator, m, n, k, T>& a, unsigned ldm, layout_t layout,
                              const cusim::site& where = cusim::site::current()) {
    using F = fragment<accumulator, m, n, k, T>;
    cusim::wmma_detail::check_alignment("nvcuda::wmma::store_matrix_sync", p, ldm, sizeof(T), where);
    cusim::detail::WmmaLane lane;
    lane.ptr = p;
    lane.ldm = ldm;
    lane.layout = layout;
    cusim::wmma_detail::arrive(cusim::detail::WarpOpKind::WmmaStore, lane, where);
    cusim::wmma_detail::lane_transfer<accumulator, F::rows, F::cols, F::num_elements, false>(const_cast<T*>(a.x), p, ldm,
                                                                                layout == mem_col_major, true);
}

template <int m, int n, int k, class TD, class TA, class LA, class TB, class LB, class TC>
__attribute__((always_inline)) inline void mma_sync(fragment<accumulator, m, n, k, TD>& d, const fragment<matrix_a, m, n, k, TA, LA>& a,
                     const fragment<matrix_b, m, n, k, TB, LB>& b, const fragment<accumulator, m, n, k, TC>& c,
                     bool satf = false, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::wmma_detail;
    static_assert(std::is_same_v<TA, TB> || (is_int8<TA> && is_int8<TB>),
                  "mma_sync: matrix_a and matrix_b must have the same element type");
    static_assert(!is_int8<TA> || std::is_same_v<TA, TB>,
                  "mma_sync: signed and unsigned char inputs cannot be mixed");
    static_assert(std::is_same_v<TA, __half> || (std::is_same_v<TD, TC> &&
                  (is_int8<TA> ? std::is_same_v<TD, int> : std::is_same_v<TA, double> ? std::is_same_v<TD, double> : std::is_same_v<TD, float>)),
                  "mma_sync: accumulator type does not match the inputs (__half inputs: float or __half; "
                  "__nv_bfloat16 and tf32: float; char: int; double: double)");
    static_assert(!std::is_same_v<TA, __half> || ((std::is_same_v<TD, float> || std::is_same_v<TD, __half>) &&
                                                  (std::is_same_v<TC, float> || std::is_same_v<TC, __half>)),
                  "mma_sync: __half inputs accumulate in float or __half");
    using FD = fragment<accumulator, m, n, k, TD>;
    using FA = fragment<matrix_a, m, n, k, TA, LA>;
    using FB = fragment<matrix_b, m, n, k, TB, LB>;
    using FC = fragment<accumulator, m, n, k, TC>;
    cusim::detail::WmmaLane lane;
    lane.a = &a;
    lane.b = &b;
    lane.c = &c;
    lane.d = &d;
    lane.satf = satf;
    lane.mma = &mma_compute<FD, FA, FB, FC, m, n, k>;
    arrive(cusim::detail::WarpOpKind::WmmaMma, lane, where);
}

}  // namespace wmma
}  // namespace nvcuda
