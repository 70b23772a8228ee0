// Runs every rewrite rule against the test stub runtime and prints what happened as
// "key=value" lines; test_rewrite.py checks them.  Lines marked "LAUNCH:<tag>" are
// launch sites whose reported line the test compares with this file.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

static void report(const char* key, long long value) { std::printf("%s=%lld\n", key, value); }

static bool id_is(const void* kernel) { return ::cusim::last_launch.kernel_id == kernel; }

// ---- argument conversion as in CUDA: float -> double ----------------------------------
__global__ void store_double(double* out, double value) { *out = value; }

// ---- __shared__: one storage per declaration and block, several declarators -------------
__global__ void count_threads(int* out) {
    __shared__ int counter;
    counter += 1;  // the stub runs threads one after another
    *out = counter;
}

__global__ void shared_layout(std::uintptr_t* out) {
    __shared__ int a[4], b[4], *p;
    __shared__ __align__(64) unsigned char aligned_bytes[3];
    __shared__ volatile float vol[2][3];
    a[0] = 1;
    b[0] = 2;
    p = &a[1];
    vol[1][2] = 3.5f;
    out[0] = reinterpret_cast<std::uintptr_t>(&a[0]) != reinterpret_cast<std::uintptr_t>(&b[0]);
    out[1] = a[0] * 10 + b[0];
    out[2] = reinterpret_cast<std::uintptr_t>(aligned_bytes) % 64;
    out[3] = p == &a[1];
    out[4] = static_cast<std::uintptr_t>(vol[1][2] * 2);
    out[5] = sizeof(vol) == sizeof(float) * 6;
}

__global__ void shared_struct(int* out) {
    __shared__ struct {
        int hits;
        float pad[3];
    } stats, *self;
    stats.hits += 1;
    self = &stats;
    *out = self->hits;
}

// ---- extern __shared__ at function scope and at namespace scope ---------------------------
__global__ void dynamic_local(std::uintptr_t* out) {
    extern __shared__ float dyn[];
    dyn[0] = 1.5f;
    out[0] = static_cast<void*>(dyn) == ::cusim::dynamic_shared();
}

extern __shared__ int file_dyn[];
namespace staging {
extern __shared__ __align__(16) double ns_dyn[];
}

__global__ void dynamic_file_scope(std::uintptr_t* out) {
    file_dyn[0] = 7;
    out[0] = static_cast<void*>(file_dyn) == ::cusim::dynamic_shared();
    out[1] = static_cast<void*>(staging::ns_dyn) == ::cusim::dynamic_shared();
}

// ---- templates, overloads, namespaces, kernel ids -----------------------------------------
template <class T, int N>
struct Tile {
    T v[N];
};

template <class T>
__global__ void fill(T* out, T value) { *out = value; }

template <class TileT>
__global__ void tile_size(int* out) { *out = static_cast<int>(sizeof(TileT)); }

__global__ void overloaded(int* out) { *out = 1; }
__global__ void overloaded(float* out) { *out = 2.0f; }

namespace math {
__global__ void negate(int* x) { *x = -*x; }
}  // namespace math

struct KernelTable {
    void (*fn)(int*);
    void (*fns[2])(int*);
};

int zero_arg_calls = 0;
__global__ void no_args() { ++zero_arg_calls; }

__noinline__ __device__ int twice(int x) { return 2 * x; }
__global__ void call_noinline(int* out) { *out = twice(21); }

int main() {
    double d = 0;
    store_double<<<1, 1>>>(&d, 2.5f);  // LAUNCH:double
    report("double_value_x10", static_cast<long long>(d * 10));
    report("double_line", ::cusim::last_launch.line);
    report("double_id", id_is(reinterpret_cast<const void*>(&store_double)));

    int counter = 0;
    count_threads<<<2, 4>>>(&counter);
    report("shared_counter", counter);

    std::uintptr_t layout[6] = {};
    shared_layout<<<1, 1>>>(layout);
    for (int i = 0; i < 6; ++i) {
        char key[32];
        std::snprintf(key, sizeof key, "layout%d", i);
        report(key, static_cast<long long>(layout[i]));
    }

    int hits = 0;
    shared_struct<<<2, 3>>>(&hits);
    report("shared_struct", hits);

    std::uintptr_t dyn[2] = {};
    dynamic_local<<<1, 1, 64>>>(dyn);
    report("dyn_local", static_cast<long long>(dyn[0]));
    report("dyn_local_shmem", static_cast<long long>(::cusim::last_launch.shmem));
    cudaStream_t stream = nullptr;
    dynamic_file_scope<<<dim3(1), dim3(1), 32, stream>>>(dyn);
    report("dyn_file", static_cast<long long>(dyn[0]));
    report("dyn_namespace", static_cast<long long>(dyn[1]));

    float f = 0;
    fill<float><<<1, 1>>>(&f, 4);  // explicit template argument: 4 converts to float
    report("fill_float_x10", static_cast<long long>(f * 10));
    report("fill_float_id", id_is(reinterpret_cast<const void*>(&fill<float>)));
    int deduced = 0;
    fill<<<1, 1>>>(&deduced, 9);  // deduced: the companion finds fill<int>
    report("fill_deduced", deduced);
    report("fill_deduced_id", id_is(reinterpret_cast<const void*>(&fill<int>)));

    int tile_bytes = 0;
    tile_size<Tile<float, 4>><<<1, 1>>>(&tile_bytes);
    report("tile_bytes", tile_bytes);
    tile_size<Tile<Tile<char, 2>, 3>><<<1,
                                        1>>>(&tile_bytes);  // LAUNCH:nested
    report("nested_tile_bytes", tile_bytes);
    report("nested_line", ::cusim::last_launch.line);
    std::printf("nested_name=%s\n", ::cusim::last_launch.kernel_name);

    int oi = 0;
    float of = 0;
    overloaded<<<1, 1>>>(&oi);
    overloaded<<<1, 1>>>(&of);
    report("overload_int", oi);
    report("overload_float", static_cast<long long>(of));
    report("overload_id", id_is(reinterpret_cast<const void*>(static_cast<void (*)(float*)>(&overloaded))));

    int x = 5;
    math::negate<<<1, 1>>>(&x);
    ::math::negate<<<1, 1>>>(&x);
    math::negate<<<1, 1>>>(&x);
    report("negated", x);
    report("qualified_id", id_is(reinterpret_cast<const void*>(&math::negate)));

    no_args<<<3, 2>>>();
    report("zero_arg_calls", zero_arg_calls);

    int nine = 0;
    void (*kernel_ptr)(int*) = &math::negate;
    nine = -9;
    kernel_ptr<<<1, 1>>>(&nine);
    (*kernel_ptr)<<<1, 1>>>(&nine);
    kernel_ptr<<<1, 1>>>(&nine);
    report("pointer_launch", nine);
    // A pointer variable names one function: the compiler resolves the id (its value).
    report("pointer_id", id_is(reinterpret_cast<const void*>(&math::negate)));

    KernelTable table{&math::negate, {&math::negate, &math::negate}};
    KernelTable* tp = &table;
    int m = 3;
    table.fn<<<1, 1>>>(&m);
    tp->fns[1]<<<1, 1>>>(&m);
    tp->fns[0]<<<1, 1>>>(&m);
    report("member_launch", m);

    int out = 0;
    call_noinline<<<1, 1>>>(&out);
    report("noinline", out);
    return 0;
}
