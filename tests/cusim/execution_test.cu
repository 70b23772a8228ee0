// Execution model: thread and block coordinates in 1D/2D/3D, per-block shared memory (static,
// in device functions, dynamic), __syncthreads and its counting variants. Registered with
// CUSIM_THREADS=4 so blocks really run in parallel on several workers.
#include <cuda_runtime.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

// ---- coordinates ----------------------------------------------------------------------------

constexpr int kCoordFields = 13;

// Every thread writes what it sees into the slot of its (block, thread) linear index, and
// counts its visits there (each slot must be written exactly once).
__global__ void record_coords(unsigned* out) {
    const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned* slot = out + (size_t(block) * blockDim.x * blockDim.y * blockDim.z + thread) * kCoordFields;
    slot[0] = threadIdx.x;
    slot[1] = threadIdx.y;
    slot[2] = threadIdx.z;
    slot[3] = blockIdx.x;
    slot[4] = blockIdx.y;
    slot[5] = blockIdx.z;
    slot[6] = blockDim.x;
    slot[7] = blockDim.y;
    slot[8] = blockDim.z;
    slot[9] = gridDim.x;
    slot[10] = gridDim.y;
    slot[11] = gridDim.z;
    atomicAdd(&slot[12], 1u);
}

static void check_coords(dim3 grid, dim3 block) {
    SCOPED_TRACE(::testing::Message() << "grid (" << grid.x << "," << grid.y << "," << grid.z << ") block ("
                                      << block.x << "," << block.y << "," << block.z << ")");
    const size_t nthreads = size_t(block.x) * block.y * block.z;
    const size_t nblocks = size_t(grid.x) * grid.y * grid.z;
    DeviceBuffer<unsigned> d(nthreads * nblocks * kCoordFields);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(d.fill_bytes(0));
    record_coords<<<grid, block>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), d.size());
    size_t bad = 0;
    for (size_t b = 0; b < nblocks; ++b) {
        const unsigned bx = b % grid.x, by = (b / grid.x) % grid.y, bz = b / (size_t(grid.x) * grid.y);
        for (size_t t = 0; t < nthreads; ++t) {
            const unsigned tx = t % block.x, ty = (t / block.x) % block.y, tz = t / (size_t(block.x) * block.y);
            const unsigned expect[kCoordFields] = {tx,      ty,      tz,     bx,     by,     bz, block.x,
                                                   block.y, block.z, grid.x, grid.y, grid.z, 1};
            const unsigned* got = &h[(b * nthreads + t) * kCoordFields];
            for (int k = 0; k < kCoordFields; ++k) {
                if (got[k] != expect[k] && ++bad <= 5)
                    ADD_FAILURE() << "block " << b << " thread " << t << " field " << k << ": got " << got[k]
                                  << ", expected " << expect[k];
            }
        }
    }
    EXPECT_EQ(bad, 0u) << "mismatching fields";
}

TEST(Execution, Coordinates1D) {
    check_coords(dim3(5), dim3(37));
    check_coords(dim3(1), dim3(1024));
    check_coords(dim3(300), dim3(1));
}
TEST(Execution, Coordinates2D) {
    check_coords(dim3(3, 2), dim3(8, 4));
    check_coords(dim3(1, 7), dim3(33, 3));
}
TEST(Execution, Coordinates3D) {
    check_coords(dim3(2, 3, 2), dim3(4, 2, 3));
    check_coords(dim3(1, 1, 3), dim3(2, 2, 64));
}

// ---- static shared memory -------------------------------------------------------------------

// Each block fills its tile with its own tag, then reads other threads' entries over several
// barrier rounds. Blocks running at the same time on other workers must never be visible.
__global__ void shared_isolation(int* wrong, int rounds) {
    __shared__ int tile[256];
    __shared__ int block_tag;
    if (threadIdx.x == 0) block_tag = static_cast<int>(blockIdx.x);
    for (int r = 0; r < rounds; ++r) {
        tile[threadIdx.x] = static_cast<int>(blockIdx.x) * 1000 + r;
        __syncthreads();
        const int seen = tile[(threadIdx.x + 37 * r + 1) % blockDim.x];
        if (seen != static_cast<int>(blockIdx.x) * 1000 + r || block_tag != static_cast<int>(blockIdx.x))
            atomicAdd(&wrong[blockIdx.x], 1);
        __syncthreads();
    }
}

TEST(Execution, StaticSharedMemoryIsPerBlock) {
    constexpr int kBlocks = 64, kRounds = 8;
    DeviceBuffer<int> wrong(kBlocks);
    ASSERT_CUDA_OK(wrong.status());
    ASSERT_CUDA_OK(wrong.fill_bytes(0));
    shared_isolation<<<kBlocks, 256>>>(wrong.get(), kRounds);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(wrong);
    ASSERT_EQ(h.size(), size_t(kBlocks));
    for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(h[b], 0) << "block " << b << " saw another block's shared memory";
}

// A __shared__ variable declared in a __device__ function is one variable per block, shared by
// every thread that calls the function.
__device__ int block_total(int v) {
    __shared__ int total;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    atomicAdd(&total, v);
    __syncthreads();
    const int result = total;
    __syncthreads();
    return result;
}

__global__ void shared_in_device_function(int* out) {
    const int first = block_total(static_cast<int>(threadIdx.x));
    const int second = block_total(static_cast<int>(blockIdx.x));
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = first;
        out[2 * blockIdx.x + 1] = second;
    }
}

TEST(Execution, SharedDeclaredInDeviceFunction) {
    constexpr int kBlocks = 8, kThreads = 100;
    DeviceBuffer<int> d(2 * kBlocks);
    ASSERT_CUDA_OK(d.status());
    shared_in_device_function<<<kBlocks, kThreads>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(2 * kBlocks));
    for (int b = 0; b < kBlocks; ++b) {
        EXPECT_EQ(h[2 * b], kThreads * (kThreads - 1) / 2) << "block " << b;
        EXPECT_EQ(h[2 * b + 1], kThreads * b) << "block " << b;
    }
}

// ---- dynamic shared memory ------------------------------------------------------------------

// Dynamic shared memory carved into a float and an int region next to a static array: the three
// must not overlap and must hold what each thread wrote.
__global__ void dynamic_and_static(float* fout, int* iout, int* sout, int n) {
    extern __shared__ unsigned char smem[];
    __shared__ int fixed[128];
    float* f = reinterpret_cast<float*>(smem);
    int* i = reinterpret_cast<int*>(f + n);
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        f[k] = 0.5f * k + blockIdx.x;
        i[k] = -k - static_cast<int>(blockIdx.x);
    }
    for (int k = threadIdx.x; k < 128; k += blockDim.x) fixed[k] = 7 * k + static_cast<int>(blockIdx.x);
    __syncthreads();
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        fout[blockIdx.x * n + k] = f[n - 1 - k];
        iout[blockIdx.x * n + k] = i[n - 1 - k];
    }
    for (int k = threadIdx.x; k < 128; k += blockDim.x) sout[blockIdx.x * 128 + k] = fixed[127 - k];
}

TEST(Execution, DynamicSharedMemoryOfSeveralSizes) {
    for (int n : {1, 31, 500, 3000}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n);
        constexpr int kBlocks = 6;
        DeviceBuffer<float> f(kBlocks * n);
        DeviceBuffer<int> i(kBlocks * n);
        DeviceBuffer<int> s(kBlocks * 128);
        ASSERT_CUDA_OK(f.status());
        ASSERT_CUDA_OK(i.status());
        ASSERT_CUDA_OK(s.status());
        dynamic_and_static<<<kBlocks, 64, n * (sizeof(float) + sizeof(int))>>>(f.get(), i.get(), s.get(), n);
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto hf = download_ok(f);
        const auto hi = download_ok(i);
        const auto hs = download_ok(s);
        ASSERT_EQ(hf.size(), size_t(kBlocks * n));
        ASSERT_EQ(hi.size(), size_t(kBlocks * n));
        ASSERT_EQ(hs.size(), size_t(kBlocks * 128));
        int bad = 0;
        for (int b = 0; b < kBlocks; ++b) {
            for (int k = 0; k < n; ++k) {
                const int src = n - 1 - k;
                bad += hf[b * n + k] != 0.5f * src + b;
                bad += hi[b * n + k] != -src - b;
            }
            for (int k = 0; k < 128; ++k) bad += hs[b * 128 + k] != 7 * (127 - k) + b;
        }
        EXPECT_EQ(bad, 0);
    }
}

// ---- __syncthreads --------------------------------------------------------------------------

// Hillis-Steele inclusive scan with double buffering: correct only if every barrier holds.
__global__ void block_scan(const int* in, int* out) {
    __shared__ int buf[2][1024];
    int cur = 0;
    buf[cur][threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        const int v = buf[cur][threadIdx.x] + (threadIdx.x >= offset ? buf[cur][threadIdx.x - offset] : 0);
        buf[1 - cur][threadIdx.x] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    out[threadIdx.x] = buf[cur][threadIdx.x];
}

TEST(Execution, SyncthreadsOrdersSharedMemory) {
    for (int n : {32, 33, 1000, 1024}) {
        SCOPED_TRACE(::testing::Message() << "block of " << n);
        DeviceBuffer<int> in(n), out(n);
        ASSERT_CUDA_OK(in.status());
        ASSERT_CUDA_OK(out.status());
        std::vector<int> h(n);
        for (int k = 0; k < n; ++k) h[k] = (k * 37) % 11 - 5;
        ASSERT_CUDA_OK(in.upload(h));
        block_scan<<<1, n>>>(in.get(), out.get());
        auto r = launch_result();
        ASSERT_CUDA_OK(r.launch);
        ASSERT_CUDA_OK(r.sync);
        const auto got = download_ok(out);
        ASSERT_EQ(got.size(), size_t(n));
        std::vector<int> expect(n);
        std::partial_sum(h.begin(), h.end(), expect.begin());
        EXPECT_EQ(got, expect);
    }
}

// Results of the counting barriers, one row of four per thread.
__global__ void sync_variants(int* out) {
    const int t = static_cast<int>(threadIdx.x);
    int* row = out + 6 * t;
    row[0] = __syncthreads_count(t % 3 == 0);
    row[1] = __syncthreads_and(t < static_cast<int>(blockDim.x));
    row[2] = __syncthreads_and(t != 150);
    row[3] = __syncthreads_or(t == static_cast<int>(blockDim.x) - 1);
    row[4] = __syncthreads_or(0);
    row[5] = __syncthreads_count(1);
}

TEST(Execution, SyncthreadsCountAndOr) {
    constexpr int kThreads = 200;  // not a multiple of the warp size
    DeviceBuffer<int> d(6 * kThreads);
    ASSERT_CUDA_OK(d.status());
    sync_variants<<<3, kThreads>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(6 * kThreads));
    int multiples_of_3 = 0;
    for (int t = 0; t < kThreads; ++t) multiples_of_3 += t % 3 == 0;
    for (int t = 0; t < kThreads; ++t) {
        SCOPED_TRACE(::testing::Message() << "thread " << t);
        EXPECT_EQ(h[6 * t + 0], multiples_of_3);
        EXPECT_EQ(h[6 * t + 1], 1);
        EXPECT_EQ(h[6 * t + 2], 0);
        EXPECT_EQ(h[6 * t + 3], 1);
        EXPECT_EQ(h[6 * t + 4], 0);
        EXPECT_EQ(h[6 * t + 5], kThreads);
        if (testing::Test::HasFailure()) break;
    }
}

// Warps that return early do not take part in later barriers (compute capability 7.0+).
__global__ void barrier_after_exit(int* out) {
    if (threadIdx.x >= 128) return;
    const int n = __syncthreads_count(1);
    if (threadIdx.x == 0) *out = n;
}

TEST(Execution, ExitedWarpsLeaveTheBarrier) {
    DeviceBuffer<int> d(1);
    ASSERT_CUDA_OK(d.status());
    barrier_after_exit<<<2, 256>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 128);
}

// Shared memory is aligned for its type: vector types in static declarations, and the dynamic
// shared memory base (at least 16 bytes, which float4/double2 loads need).
__global__ void shared_alignment(unsigned* misaligned) {
    __shared__ char pad;
    __shared__ float4 vec4[3];
    __shared__ double2 dbl2[3];
    __shared__ __align__(64) int aligned64[5];
    extern __shared__ float4 dyn4[];
    pad = 1;
    const auto off = [](const void* p, unsigned a) { return static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) % a); };
    if (threadIdx.x == 0) {
        misaligned[4 * blockIdx.x + 0] = off(vec4, 16) + off(&vec4[1], 16);
        misaligned[4 * blockIdx.x + 1] = off(dbl2, 16);
        misaligned[4 * blockIdx.x + 2] = off(aligned64, 64);
        misaligned[4 * blockIdx.x + 3] = off(dyn4, 16);
    }
    vec4[threadIdx.x % 3] = make_float4(pad, 0, 0, 0);
    dbl2[threadIdx.x % 3] = make_double2(1.0, 2.0);
    aligned64[threadIdx.x % 5] = 3;
}

TEST(Execution, SharedMemoryAlignment) {
    DeviceBuffer<unsigned> d(4 * 3);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(d.fill_bytes(0xff));
    shared_alignment<<<3, 32, 100>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 12u);
    for (int k = 0; k < 12; ++k) EXPECT_EQ(h[k], 0u) << "block " << k / 4 << " check " << k % 4;
}
