// Minimal stand-in for cusim's runtime, used only by the rewriter's tests.
//
// It provides exactly the interface the rewriter's output calls (::cusim::launch,
// launch_config, shared_var, dynamic_shared, register_dynamic_shared_pointer, kernel_pointer) plus the
// CUDA keywords the test sources use, so the rewriter is tested against the contract
// rather than against the real runtime.  launch() runs the kernel once per thread of the
// grid, one after another, with no barriers; each block gets fresh shared storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct CUstream_st;
typedef CUstream_st* cudaStream_t;

namespace cusim {

struct launch_config {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
    launch_config(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0)
        : grid(g), block(b), shmem(s), stream(st) {}
};

// What the last launch was told, for the tests to print.
struct launch_record {
    const char* file = nullptr;
    int line = 0;
    const char* kernel_name = nullptr;
    const void* kernel_id = nullptr;
    unsigned grid = 0, block = 0;
    size_t shmem = 0;
    cudaStream_t stream = nullptr;
};
inline launch_record last_launch;

namespace stub {
struct block_storage {
    std::map<const void*, void*> vars;
    void* dynamic = nullptr;
    void clear() {
        for (auto& kv : vars) std::free(kv.second);
        vars.clear();
        std::free(dynamic);
        dynamic = nullptr;
    }
};
inline block_storage current;
inline std::vector<void** (*)()>& dynamic_pointers() {
    static std::vector<void** (*)()> getters;
    return getters;
}
inline unsigned thread_rank = 0;  // linear thread index within the grid
}  // namespace stub

template <class T>
T& shared_var(const void* key, size_t align) {
    auto& slot = stub::current.vars[key];
    if (!slot) {
        size_t a = align < alignof(T) ? alignof(T) : align;
        size_t bytes = (sizeof(T) + a - 1) / a * a;
        slot = std::aligned_alloc(a, bytes);
        std::memset(slot, 0, bytes);
    }
    return *static_cast<T*>(slot);
}

inline void* dynamic_shared() { return stub::current.dynamic; }

inline bool register_dynamic_shared_pointer(void** (*getter)()) {
    stub::dynamic_pointers().push_back(getter);
    return true;
}

// (void*)kernel: the pointer, as the cast gives it.
template <class T>
inline void* kernel_pointer(T value, const char*) {
    return (void*)value;
}

namespace detail {
// Kernel registration at the top of each kernel body: the first __launch_bounds__ argument of each
// kernel (instantiation) the program defined, by address, for the tests to print.
inline std::map<const void*, long long>& kernel_bounds() {
    static std::map<const void*, long long> bounds;
    return bounds;
}
template <auto Kernel, long long MaxThreads>
inline const bool kernel_anchor = (kernel_bounds()[reinterpret_cast<const void*>(Kernel)] = MaxThreads, true);
template <class Tag, class... P>
const void* kernel_id_of(Tag, void (*kernel)(P...)) {
    return reinterpret_cast<const void*>(kernel);
}
template <auto Kernel>
struct kernel_ref {
    static const void* id() { return reinterpret_cast<const void*>(Kernel); }
};
template <class R>
struct deduced_kernel_id {
    const void* id;
    R resolve;
};
template <class R>
deduced_kernel_id<R> deduced_kernel(const void* id, R resolve) {
    return {id, resolve};
}
}  // namespace detail

template <class F, class... A>
void launch(const launch_config& cfg, const char* file, int line, const char* kernel_name,
            const void* kernel_id, F&& call, A&&... args) {
    last_launch = launch_record{file, line, kernel_name, kernel_id,
                                cfg.grid.x * cfg.grid.y * cfg.grid.z,
                                cfg.block.x * cfg.block.y * cfg.block.z, cfg.shmem, cfg.stream};
    std::tuple<std::decay_t<A>...> copies(std::forward<A>(args)...);
    for (unsigned b = 0; b < last_launch.grid; ++b) {
        stub::current.dynamic = std::aligned_alloc(16, (cfg.shmem + 16) / 16 * 16);
        for (auto getter : stub::dynamic_pointers()) *getter() = stub::current.dynamic;
        for (unsigned t = 0; t < last_launch.block; ++t) {
            stub::thread_rank = b * last_launch.block + t;
            std::apply(call, copies);
        }
        stub::current.clear();
    }
}

template <class R, class F, class... A>
void launch(const launch_config& cfg, const char* file, int line, const char* kernel_name,
            detail::deduced_kernel_id<R> kernel, F&& call, A&&... args) {
    const void* id = kernel.id ? kernel.id : kernel.resolve.template operator()<std::decay_t<A>...>();
    launch(cfg, file, line, kernel_name, id, std::forward<F>(call), std::forward<A>(args)...);
}

template <class K, class F>
struct Launcher {
    launch_config cfg;
    const char* file;
    int line;
    const char* kernel_name;
    K kernel_id;  // an address, or a deduced_kernel_id passed from the macro's use
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

#define CUSIM_KERNEL_ID(...)                                                                \
    ([&](auto cusim_tag_) -> const void* {                                                  \
        if constexpr (requires { ::cusim::detail::kernel_id_of(cusim_tag_, __VA_ARGS__); }) \
            return ::cusim::detail::kernel_id_of(cusim_tag_, __VA_ARGS__);                   \
        else                                                                                \
            return nullptr;                                                                 \
    }(0))
#define CUSIM_KERNEL_NAME(...) CUSIM_KERNEL_NAME_(__VA_ARGS__)
#define CUSIM_KERNEL_NAME_(...) #__VA_ARGS__
