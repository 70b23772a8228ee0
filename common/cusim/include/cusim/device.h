// Kernel-side built-ins of cusim: thread coordinates, barriers, warp intrinsics, shared memory
// and the launch entry point the source rewriter calls.
#pragma once
#include <cstddef>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cusim/fiber.h"
#include "cusim/int_types.h"
#include "cusim/runtime_api.h"
#include "cusim/vector_types.h"

// Built-in variables. They are per OS thread and rewritten by the scheduler on every fiber switch,
// so each simulated CUDA thread sees its own values.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int warpSize = 32;

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
// The source rewriter turns every __shared__ it sees into per-block storage known to the analysis
// tools. What it does not see (a macro body, a header found through -I that was not listed)
// becomes per-worker storage: a block never leaves its worker thread, so this is per block too,
// only without the analysis. extern __shared__ always needs the rewriter.
#define __shared__ static thread_local
// The kernel id of a launch the rewriter could not resolve from the declarations it saw (a kernel
// from a header, a launch inside a macro body): cusim::detail::kernel_id_of when the expression
// names one function, else nullptr (no compile error: the call is made dependent on the lambda's
// parameter, so a failed overload resolution only makes the requires-expression false).
#define CUSIM_KERNEL_ID(...)                                                                      \
    ([&](auto cusim_tag_) -> const void* {                                                        \
        if constexpr (requires { ::cusim::detail::kernel_id_of(cusim_tag_, __VA_ARGS__); })       \
            return ::cusim::detail::kernel_id_of(cusim_tag_, __VA_ARGS__);                         \
        else                                                                                      \
            return nullptr;                                                                       \
    }(0))
#define CUSIM_KERNEL_NAME(...) CUSIM_KERNEL_NAME_(__VA_ARGS__)
#define CUSIM_KERNEL_NAME_(...) #__VA_ARGS__
#ifndef __CUDACC_RTC__
#define CUSIM 1
#endif

namespace cusim {

using site = std::source_location;

/// Launch configuration as written between `<<<` and `>>>`.
struct launch_config {
    dim3 grid;
    dim3 block;
    size_t shmem;
    cudaStream_t stream;
    bool cooperative = false;  // cudaLaunchCooperativeKernel: every block co-resident, grid.sync() allowed
    launch_config(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), shmem(s), stream(st) {}
};

namespace detail {

struct KernelLaunch {
    const launch_config* cfg;
    const char* file;
    int line;
    const char* kernel_name;
    const void* kernel_id;
    void (*entry)(void*);
    void* closure;
    bool instrumented;  // the kernel's translation unit carries analysis instrumentation
};
void launch_kernel(const KernelLaunch& launch);
/// A kernel defined in code the source rewriter saw, at `kernel`: `signature` is the
/// __PRETTY_FUNCTION__ of kernel_signature<kernel> (it names the instantiation, e.g. `scale<256>`,
/// for reports), `max_threads` its `__launch_bounds__` maximum block size (0 without one):
/// cudaFuncGetAttributes reports it and a launch of larger blocks fails.
bool register_kernel(const void* kernel, const char* signature, long long max_threads);
/// The name registered for the kernel at `kernel`, else `fallback`.
const char* registered_kernel_name(const void* kernel, const char* fallback);

template <auto Kernel>
const char* kernel_signature() {
    return __PRETTY_FUNCTION__;
}
/// The rewriter puts `(void)&kernel_anchor<&k, BOUND>;` at the top of every kernel definition:
/// defining the body instantiates the anchor, once per instantiation of a template kernel (with
/// BOUND evaluated there: a template parameter, a constexpr expression), and its initializer
/// registers the kernel before main runs.
template <auto Kernel, long long MaxThreads>
inline const bool kernel_anchor =
    register_kernel(reinterpret_cast<const void*>(Kernel), kernel_signature<Kernel>(), MaxThreads);

/// The return type of a kernel's companion declaration (`cusim_kernel_id_k`, which the rewriter
/// declares after every declaration of a kernel k, never defined): the address of the kernel whose
/// companion a call resolves to.
template <auto Kernel>
struct kernel_ref {
    static const void* id() { return reinterpret_cast<const void*>(Kernel); }
};
/// A launch's kernel id where the rewriter could not name the kernel (template arguments deduced,
/// an overload set): `id` as the compiler resolved the kernel expression (nullptr when it names no
/// single function), else `resolve.operator()<decayed argument types...>()`, which calls the
/// kernel's companion unevaluated with those types and so finds the instantiation the launch calls.
template <class R>
struct deduced_kernel_id {
    const void* id;
    R resolve;
};
template <class R>
deduced_kernel_id<R> deduced_kernel(const void* id, R resolve) {
    return {id, resolve};
}

/// The address of the kernel a kernel expression names, when it names exactly one function (a
/// kernel, a template-id, a function pointer); nullptr for an overload set or a template whose
/// arguments a launch deduces. See CUSIM_KERNEL_ID.
template <class Tag, class... P>
const void* kernel_id_of(Tag, void (*kernel)(P...)) {
    return reinterpret_cast<const void*>(kernel);
}

enum class WarpOpKind : uint8_t {
    Sync, ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All, MatchAny, MatchAll,
    WmmaLoad, WmmaStore, WmmaMma,  // <mma.h>: value points to the lane's cusim::detail::WmmaLane
    ReduceAdd, ReduceMinU, ReduceMaxU, ReduceMinS, ReduceMaxS, ReduceAnd, ReduceOr, ReduceXor
};

// Warp collective, arrival: deposits `value` for the calling lane. When every lane of `mask` has
// arrived at an operation of the same kind with the same mask, each lane's result is stored at
// its `result`. Returns the switch to the next thread when the caller must wait (cusim/fiber.h).
Handoff warp_arrive(WarpOpKind kind, unsigned mask, uint64_t value, int arg, int width, const site& where,
                    uint64_t* result);
// Block barrier, arrival (kind: 0 plain, 1 count, 2 and, 3 or); the result of the last completed
// barrier for kinds 1-3.
Handoff barrier_arrive(int kind, int predicate, const site& where);
int barrier_result(int kind);
// Grid barrier (cooperative_groups::grid_group::sync()), arrival: the block's threads meet as at
// __syncthreads, then the block waits until every block of the cooperative launch has arrived.
Handoff grid_barrier_arrive(const site& where);
/// True inside a kernel started by cudaLaunchCooperativeKernel (grid_group::is_valid()).
bool cooperative_launch();

// Waits at the warp collective and returns the lane's result.
__attribute__((always_inline)) inline uint64_t warp_collective(WarpOpKind kind, unsigned mask, uint64_t value,
                                                               int arg, int width, const site& where) {
    uint64_t result;
    complete_handoff(warp_arrive(kind, mask, value, arg, width, where, &result));
    return result;
}
__attribute__((always_inline)) inline int block_barrier(int kind, int predicate, const site& where) {
    complete_handoff(barrier_arrive(kind, predicate, where));
    return kind == 0 ? 0 : barrier_result(kind);
}
__attribute__((always_inline)) inline void grid_barrier(const site& where) {
    complete_handoff(grid_barrier_arrive(where));
}
unsigned active_mask();
// cooperative_groups::coalesced_threads(): the lanes of the warp that reach the call at `where`
// together (after every lane that can run has run up to a wait or its exit).
unsigned coalesced_mask(const site& where);
unsigned lane_id();
void* shared_alloc(const void* key, size_t size, size_t align);
/// The running block's last `__shared__` lookup (key, address); reset when a block starts.
struct SharedLookup {
    const void* key;
    void* ptr;
};
extern thread_local SharedLookup tls_shared_last;
[[noreturn]] void device_trap(const char* what, const site& where);

/// What one lane brings to a warp matrix operation; the lane that completes the collective
/// compares the lanes' arguments and, for mma_sync, computes every lane's result.
struct WmmaLane {
    const void* ptr = nullptr;  // load/store: the matrix in memory
    unsigned ldm = 0;
    int layout = 0;
    const void* a = nullptr;  // mma_sync: this lane's fragments
    const void* b = nullptr;
    const void* c = nullptr;
    void* d = nullptr;
    bool satf = false;
    void (*mma)(WmmaLane* const* lanes) = nullptr;
};

/// Misaligned pointer or leading dimension of a warp matrix function: ends the kernel with
/// cudaErrorMisalignedAddress.
[[noreturn]] void wmma_misaligned(const char* function, const void* ptr, unsigned ldm, unsigned element_bytes,
                                  const site& where);

template <class T>
inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes per lane");
    uint64_t b = 0;
    __builtin_memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(uint64_t b) {
    T v;
    __builtin_memcpy(static_cast<void*>(&v), &b, sizeof(T));
    return v;
}

}  // namespace detail

/// Per-block storage of one `__shared__` declaration (emitted by the source rewriter).
template <class T>
inline T& shared_var(const void* key, size_t align) {
    const detail::SharedLookup last = detail::tls_shared_last;  // every thread of a block asks in turn
    if (__builtin_expect(last.key == key, 1)) return *static_cast<T*>(last.ptr);
    return *static_cast<T*>(detail::shared_alloc(key, sizeof(T), align));
}
/// The current block's dynamic shared memory (`extern __shared__`).
void* dynamic_shared();
/// File-scope `extern __shared__`: the runtime stores the block's dynamic shared memory base in
/// `*getter()` before each block runs.
bool register_dynamic_shared_pointer(void** (*getter)());

namespace detail {
/// True when a launch on @p stream must be recorded rather than run: the stream is being captured
/// into a graph, cudaGraphAddKernelNode is building a node on this thread, or the launch is in
/// kernel code (dynamic parallelism: a child grid, run when its parent grid has completed).
bool launch_is_recorded(cudaStream_t stream);
/// A recorded launch: its configuration, kernel and copied arguments in @p state, launched on a
/// stream by @p run, freed by @p destroy. (Plain function pointers: this header must not bring
/// `<functional>` or `<memory>` into every .cu file, which nvcc's implicit headers do not.)
struct RecordedLaunch {
    void* state;
    void (*run)(void* state, cudaStream_t stream);
    void (*destroy)(void* state);
};
/// Hands a recorded launch to its graph node, capture or parent grid (graph.cpp), which owns it.
void record_launch(cudaStream_t stream, const char* kernel_name, RecordedLaunch launch);
template <class F, class Values>
struct RecordedCall {
    launch_config cfg;
    const char* file;
    int line;
    const char* kernel_name;
    const void* kernel_id;
    F call;
    Values values;
};
}  // namespace detail

/// Launch entry point emitted by the source rewriter for `kernel<<<...>>>(args)`.
template <class F, class... A>
void launch(const launch_config& cfg, const char* file, int line, const char* kernel_name, const void* kernel_id,
            F&& call, A&&... args) {
    // Arguments are evaluated once, on the host, as CUDA does; each simulated thread then calls the
    // kernel with them, so parameter conversions are exactly those of a CUDA launch.
    std::tuple<std::decay_t<A>...> values(std::forward<A>(args)...);
    if (__builtin_expect(detail::launch_is_recorded(cfg.stream), 0)) {
        // Recorded: the arguments are copied now, and each replay launches the kernel with them.
        using Call = detail::RecordedCall<std::decay_t<F>, std::tuple<std::decay_t<A>...>>;
        auto* recorded = new Call{cfg, file, line, kernel_name, kernel_id, call, std::move(values)};
        detail::record_launch(
            cfg.stream, kernel_name,
            {recorded,
             [](void* state, cudaStream_t stream) {
                 Call& c = *static_cast<Call*>(state);
                 launch_config replay = c.cfg;
                 replay.stream = stream;
                 std::apply([&](const auto&... a) { ::cusim::launch(replay, c.file, c.line, c.kernel_name, c.kernel_id,
                                                                    c.call, a...); },
                            c.values);
             },
             [](void* state) { delete static_cast<Call*>(state); }});
        return;
    }
    // The callable is copied here too: a recorded launch's lives in the heap, where the kernel's
    // threads may not read (memcheck reports it), and reading its captures is a read by the kernel.
    std::decay_t<F> fn(call);
    auto body = [&]() { std::apply(fn, values); };
    using Body = decltype(body);
#ifdef __SANITIZE_THREAD__
    constexpr bool instrumented = true;
#else
    constexpr bool instrumented = false;
#endif
    detail::KernelLaunch launch{&cfg, file, line, kernel_name, kernel_id,
                                [](void* p) { (*static_cast<Body*>(p))(); }, &body, instrumented};
    detail::launch_kernel(launch);
}

/// A launch whose kernel the compiler resolves from the arguments (detail::deduced_kernel_id).
template <class R, class F, class... A>
void launch(const launch_config& cfg, const char* file, int line, const char* kernel_name,
            detail::deduced_kernel_id<R> kernel, F&& call, A&&... args) {
    const void* id = kernel.id ? kernel.id : kernel.resolve.template operator()<std::decay_t<A>...>();
    launch(cfg, file, line, kernel_name, id, std::forward<F>(call), std::forward<A>(args)...);
}

/// `k<<<cfg>>>(args)` inside a `#define`, as the rewriter writes it: launcher(cfg, ..., call)(args), so
/// that the arguments, which may be a macro's empty __VA_ARGS__, keep a call of their own. The kernel
/// id is an address, or a detail::deduced_kernel_id that the rewriter passes from the macro's use.
template <class K, class F>
struct Launcher {
    launch_config cfg;
    const char* file;
    int line;
    const char* kernel_name;
    K kernel_id;
    F call;
    template <class... A>
    void operator()(A&&... args) {
        launch(cfg, file, line, kernel_name, kernel_id, call, std::forward<A>(args)...);
    }
};
template <class F>
Launcher<const void*, F> launcher(const launch_config& cfg, const char* file, int line, const char* kernel_name,
                                  const void* kernel_id, F call) {
    return Launcher<const void*, F>{cfg, file, line, kernel_name, kernel_id, call};
}
template <class R, class F>
Launcher<detail::deduced_kernel_id<R>, F> launcher(const launch_config& cfg, const char* file, int line,
                                                   const char* kernel_name, detail::deduced_kernel_id<R> kernel_id,
                                                   F call) {
    return Launcher<detail::deduced_kernel_id<R>, F>{cfg, file, line, kernel_name, kernel_id, call};
}

}  // namespace cusim

// ---- Barriers ------------------------------------------------------------------------------------

inline void __syncthreads(const cusim::site& where = cusim::site::current()) {
    cusim::detail::block_barrier(0, 0, where);
}
inline int __syncthreads_count(int predicate, const cusim::site& where = cusim::site::current()) {
    return cusim::detail::block_barrier(1, predicate, where);
}
inline int __syncthreads_and(int predicate, const cusim::site& where = cusim::site::current()) {
    return cusim::detail::block_barrier(2, predicate, where);
}
inline int __syncthreads_or(int predicate, const cusim::site& where = cusim::site::current()) {
    return cusim::detail::block_barrier(3, predicate, where);
}

// ---- Warp intrinsics -----------------------------------------------------------------------------

inline void __syncwarp(unsigned mask = 0xffffffffu, const cusim::site& where = cusim::site::current()) {
    cusim::detail::warp_collective(cusim::detail::WarpOpKind::Sync, mask, 0, 0, 32, where);
}
inline unsigned __activemask() { return cusim::detail::active_mask(); }

template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
                     const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return from_bits<T>(warp_collective(WarpOpKind::ShflIdx, mask, to_bits(var), srcLane, width, where));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                        const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return from_bits<T>(warp_collective(WarpOpKind::ShflUp, mask, to_bits(var), static_cast<int>(delta), width, where));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                          const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return from_bits<T>(
        warp_collective(WarpOpKind::ShflDown, mask, to_bits(var), static_cast<int>(delta), width, where));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                         const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return from_bits<T>(warp_collective(WarpOpKind::ShflXor, mask, to_bits(var), laneMask, width, where));
}
inline unsigned __ballot_sync(unsigned mask, int predicate, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return static_cast<unsigned>(warp_collective(WarpOpKind::Ballot, mask, predicate != 0, 0, 32, where));
}
inline int __any_sync(unsigned mask, int predicate, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return static_cast<int>(warp_collective(WarpOpKind::Any, mask, predicate != 0, 0, 32, where));
}
inline int __all_sync(unsigned mask, int predicate, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return static_cast<int>(warp_collective(WarpOpKind::All, mask, predicate != 0, 0, 32, where));
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    return static_cast<unsigned>(warp_collective(WarpOpKind::MatchAny, mask, to_bits(value), 0, 32, where));
}

/// `__match_all_sync`: the mask if every lane of it holds the same value (and *pred = 1), else 0.
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, const cusim::site& where = cusim::site::current()) {
    using namespace cusim::detail;
    const unsigned m = static_cast<unsigned>(warp_collective(WarpOpKind::MatchAll, mask, to_bits(value), 0, 32, where));
    *pred = m != 0;
    return m;
}

// Warp reductions of compute capability 8.0 and later.
#define CUSIM_WARP_REDUCE(NAME, KIND, T)                                                              \
    inline T NAME(unsigned mask, T value, const cusim::site& where = cusim::site::current()) {          \
        using namespace cusim::detail;                                                                \
        return static_cast<T>(warp_collective(WarpOpKind::KIND, mask,                                  \
                                              static_cast<::cusim::uint64_t>(static_cast<::cusim::int64_t>(value)), 0, 32, where)); \
    }
CUSIM_WARP_REDUCE(__reduce_add_sync, ReduceAdd, unsigned)
CUSIM_WARP_REDUCE(__reduce_add_sync, ReduceAdd, int)
CUSIM_WARP_REDUCE(__reduce_min_sync, ReduceMinU, unsigned)
CUSIM_WARP_REDUCE(__reduce_min_sync, ReduceMinS, int)
CUSIM_WARP_REDUCE(__reduce_max_sync, ReduceMaxU, unsigned)
CUSIM_WARP_REDUCE(__reduce_max_sync, ReduceMaxS, int)
CUSIM_WARP_REDUCE(__reduce_and_sync, ReduceAnd, unsigned)
CUSIM_WARP_REDUCE(__reduce_or_sync, ReduceOr, unsigned)
CUSIM_WARP_REDUCE(__reduce_xor_sync, ReduceXor, unsigned)
#undef CUSIM_WARP_REDUCE

/// `__trap()` aborts the kernel like a device-side fault.
[[noreturn]] inline void __trap(const cusim::site& where = cusim::site::current()) {
    cusim::detail::device_trap("__trap()", where);
}
