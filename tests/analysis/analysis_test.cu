// cusim analysis: every tool reports its planted bug at the right line, correct kernels are clean,
// and the memory metrics match the values a GPU profiler gives for the same access patterns.
// Built with analysis instrumentation, sim backend only.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cusim/analysis.h>
#include <mma.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void reduce_with_barriers(const float* in, float* out);

// ---- Kernels with planted bugs (line numbers recorded next to the faulty statement) -----------

constexpr int kOffByOneLine = __LINE__ + 3;
__global__ void off_by_one_store(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f;  // off by one: writes out[n]
}

constexpr int kRaceWriteLine = __LINE__ + 5;
constexpr int kRaceReadLine = __LINE__ + 6;
__global__ void reduce_missing_first_barrier(const float* in, float* out) {
    __shared__ float s[256];
    const unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    for (unsigned stride = 128; stride > 0; stride >>= 1) {  // first iteration reads unsynchronized writes
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

constexpr int kUninitLine = __LINE__ + 3;
__global__ void read_uninitialized(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f;
}

constexpr int kDivergentLine = __LINE__ + 3;
__global__ void barrier_in_divergent_branch(float* out) {
    if (threadIdx.x < 16) {
        __syncthreads();
        out[threadIdx.x] = 1.0f;
    } else {
        out[threadIdx.x] = 2.0f;
        __syncthreads();
    }
}

constexpr int kSharedOobLine = __LINE__ + 3;
__global__ void shared_out_of_bounds(float* out) {
    __shared__ float s[32];
    s[threadIdx.x] = 1.0f;  // 64 threads: lanes 32..63 are past the array
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x % 32];
}

// The classic scan mistake: step d adds s[t - d] without testing t >= d.
constexpr int kSharedBeforeLine = __LINE__ + 5;
__global__ void shared_before_start(float* out) {
    extern __shared__ float s[];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x] + s[int(threadIdx.x) - 4];
}

constexpr int kHostPtrLine = __LINE__ + 2;
__global__ void write_through_pointer(float* p) {
    p[threadIdx.x] = 3.0f;
}

constexpr int kMisalignedLine = __LINE__ + 3;
__global__ void misaligned_double_read(const char* base, double* out) {
    const double* p = reinterpret_cast<const double*>(base + 4);
    out[threadIdx.x] = p[threadIdx.x];
}

// Vector types moved in one access of their width (cusim's GCC plugin marks them; a GPU faults with
// "misaligned address" when the address is not a multiple of the width). `offset` shifts the
// vectors off their natural alignment by that many elements of the base type.
constexpr int kMisalignedFloat4Line = __LINE__ + 4;
__global__ void sum_float4(const float* in, float* out, int offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* p = reinterpret_cast<const float4*>(in + offset);
    const float4 v = p[i];
    out[i] = v.x + v.y + v.z + v.w;
}
constexpr int kMisalignedFloat2Line = __LINE__ + 3;
__global__ void sum_float2(const float* in, float* out, int offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float2 v = reinterpret_cast<const float2*>(in + offset)[i];
    out[i] = v.x + v.y;
}
constexpr int kMisalignedDouble2Line = __LINE__ + 3;
__global__ void sum_double2(const double* in, double* out, int offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const double2 v = reinterpret_cast<const double2*>(in + offset)[i];
    out[i] = v.x + v.y;
}
constexpr int kMisalignedInt4Line = __LINE__ + 3;
__global__ void sum_int4(const int* in, int* out, int offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int4 v = reinterpret_cast<const int4*>(in + offset)[i];
    out[i] = v.x + v.y + v.z + v.w;
}
constexpr int kMisalignedStoreLine = __LINE__ + 3;
__global__ void store_make_float4(float* out, int offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    reinterpret_cast<float4*>(out + offset)[i] = make_float4(1.0f, 2.0f, 3.0f, float(i));
}
// Only one field of each float4 is used: a GPU still loads it with one 16-byte instruction, and the
// host compiler reads only that field.
__global__ void first_of_float4(const float4* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 v = in[i];
    out[i] = v.x;
}
// A __half2 is 4 bytes, aligned to 4: one 4-byte access, although its halves are 2-byte fields.
__global__ void copy_half2(const __half2* in, __half2* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}

__global__ void tree_without_barrier_in_loop(const float* in, float* out) {
    __shared__ float s[256];
    const unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];  // no __syncthreads inside the loop
    }
    __syncthreads();
    if (t == 0) out[0] = s[0];
}

// ---- Correct kernels ----------------------------------------------------------------------------

__global__ void warp_broadcast_then_write(float* out) {
    __shared__ float s[32];
    const unsigned t = threadIdx.x;
    if (t == 0) s[0] = 1.0f;
    __syncwarp();
    const float v = s[0];  // every lane reads lane 0's value
    __syncwarp();
    if (t == 0) s[0] = 2.0f;  // ordered after the reads by the __syncwarp
    out[t] = v;
}

__global__ void float_and_cas_atomics(float* sum, int* biggest) {
    atomicAdd(sum, 1.0f);  // a compare-and-swap loop on the CPU, one atomic on a GPU
    atomicMax(biggest, static_cast<int>(threadIdx.x));
}

__global__ void reduce_with_barriers(const float* in, float* out) {
    __shared__ float s[256];
    const unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__global__ void reduce_warp_shuffle(const float* in, float* out) {
    float v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    __shared__ float warp_sums[32];
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) w += __shfl_down_sync(0xffffffffu, w, offset);
        if (threadIdx.x == 0) out[blockIdx.x] = w;
    }
}

__global__ void histogram_atomics(const int* in, int* bins, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&bins[in[i] % 16], 1);
}

__global__ void local_array_and_params(const float* in, float* out, int n, float scale) {
    float local[8];
    for (int k = 0; k < 8; ++k) local[k] = scale * k;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + local[i % 8];
}

template <int PAD>
__global__ void transpose_tile(const float* in, float* out) {
    __shared__ float tile[32][32 + PAD];
    const int x = threadIdx.x, y = threadIdx.y;
    tile[y][x] = in[y * 32 + x];
    __syncthreads();
    out[y * 32 + x] = tile[x][y];
}

__global__ void grid_stride_copy(const float* in, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}

__global__ void copy_coalesced(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// A float4 copy: one 16-byte load and store per thread, which the host compiler splits into
// four 4-byte accesses at four instructions.
__global__ void copy_float4(const float4* in, float4* out, int n4) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = in[i];
}

// One thread per group of 4 consecutive floats, read by the same instruction in a loop: four
// requests, as on a GPU (a loop is not a vector access).
// (The count is a parameter: a constant 4 would let the host compiler unroll the loop into four
// instructions, which cusim would join like a float4.)
__global__ void sum_four_in_a_loop(const float* in, float* out, int groups, int per_group) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    float s = 0.0f;
    for (int k = 0; k < per_group; ++k) s += in[per_group * g + k];
    out[g] = s;
}

__global__ void copy_stride32(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // Lane k of a warp touches element 32*k: every lane in its own 32-byte sector.
    int j = (i % 32) * 32 + (i / 32);
    if (i < n) out[j] = in[j];
}

// ---- Helpers --------------------------------------------------------------------------------

struct Device {
    float* a = nullptr;
    float* b = nullptr;
    int n;
    explicit Device(int count) : n(count) {
        EXPECT_EQ(cudaMalloc(&a, n * sizeof(float)), cudaSuccess);
        EXPECT_EQ(cudaMalloc(&b, n * sizeof(float)), cudaSuccess);
        std::vector<float> h(n);
        for (int i = 0; i < n; ++i) h[i] = static_cast<float>(i % 13);
        EXPECT_EQ(cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        EXPECT_EQ(cudaMemset(b, 0, n * sizeof(float)), cudaSuccess);
    }
    ~Device() {
        cudaFree(a);
        cudaFree(b);
    }
};

class Analysis : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(cusim::analysis::available()) << "this test binary must be built with analysis instrumentation";
        cudaDeviceReset();
        cusim::analysis::set_tools("all");
        cusim::analysis::reset();
    }
    void TearDown() override { cudaDeviceReset(); }

    static std::vector<cusim::analysis::Report> of_tool(const std::string& tool) {
        std::vector<cusim::analysis::Report> out;
        for (auto& r : cusim::analysis::reports())
            if (r.tool == tool) out.push_back(r);
        return out;
    }
    static std::string all_reports() {
        std::string s;
        for (auto& r : cusim::analysis::reports()) s += r.message + "\n";
        return s;
    }
    static const cusim::analysis::KernelMetrics* find(const std::vector<cusim::analysis::KernelMetrics>& ms,
                                                      const std::string& name) {
        for (auto& m : ms)
            if (m.kernel == name) return &m;
        return nullptr;
    }
};

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- memcheck -------------------------------------------------------------------------------------

TEST_F(Analysis, MemcheckReportsOffByOneStoreAtItsLine) {
    float* out;
    ASSERT_EQ(cudaMalloc(&out, 33 * sizeof(float)), cudaSuccess);
    off_by_one_store<<<1, 64>>>(out, 33);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].kind, "Invalid __global__ write of size 4 bytes");
    EXPECT_TRUE(ends_with(r[0].file, "analysis_test.cu")) << r[0].file;
    EXPECT_EQ(r[0].line, kOffByOneLine);
    EXPECT_NE(r[0].message.find("0 bytes after the end of a 132-byte allocation"), std::string::npos) << r[0].message;
    EXPECT_NE(r[0].message.find("thread (33,0,0)"), std::string::npos) << r[0].message;
}

TEST_F(Analysis, MemcheckReportsSharedOutOfBounds) {
    Device d(64);
    shared_out_of_bounds<<<1, 64>>>(d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].kind, "Invalid __shared__ write of size 4 bytes");
    EXPECT_EQ(r[0].line, kSharedOobLine);
}

TEST_F(Analysis, MemcheckReportsSharedIndexBelowZeroAsShared) {
    Device d(64);
    shared_before_start<<<1, 64, 64 * sizeof(float)>>>(d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].kind, "Invalid __shared__ read of size 4 bytes");
    EXPECT_EQ(r[0].line, kSharedBeforeLine);
    EXPECT_NE(r[0].message.find("16 bytes before the start of the block's shared memory"), std::string::npos)
        << r[0].message;
}

TEST_F(Analysis, MemcheckReportsUseAfterFree) {
    float* p;
    ASSERT_EQ(cudaMalloc(&p, 64 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaFree(p), cudaSuccess);
    write_through_pointer<<<1, 32>>>(p);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].line, kHostPtrLine);
    EXPECT_NE(r[0].message.find("released by cudaFree"), std::string::npos) << r[0].message;
}

TEST_F(Analysis, MemcheckReportsHostPointerPassedToKernel) {
    std::vector<float> host(64);
    write_through_pointer<<<1, 32>>>(host.data());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_NE(r[0].message.find("is not device memory"), std::string::npos) << r[0].message;
}

TEST_F(Analysis, MemcheckReportsMisalignedAccess) {
    char* base;
    double* out;
    ASSERT_EQ(cudaMalloc(&base, 1024), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, 32 * sizeof(double)), cudaSuccess);
    ASSERT_EQ(cudaMemset(base, 0, 1024), cudaSuccess);
    misaligned_double_read<<<1, 32>>>(base, out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
    auto r = of_tool("memcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].kind, "Misaligned read of size 8 bytes");
    EXPECT_EQ(r[0].line, kMisalignedLine);
}

// A vector access is one access of its width: off its alignment, it is a memcheck error and the
// kernel ends with cudaErrorMisalignedAddress, as on a GPU, although the host compiler reads the
// vector's fields one by one, each aligned on its own.
class VectorAccesses : public Analysis {
protected:
    // n zeroed elements of device memory, released by the cudaDeviceReset that ends each fault.
    template <class T>
    static T* zeros(size_t n) {
        T* p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
        EXPECT_EQ(cudaMemset(p, 0, n * sizeof(T)), cudaSuccess);
        return p;
    }
    template <class Launch>
    void expect_misaligned(Launch launch, const std::string& kind, int line) {
        launch();
        EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
        auto r = of_tool("memcheck");
        ASSERT_EQ(r.size(), 1u) << all_reports();
        EXPECT_EQ(r[0].kind, kind);
        EXPECT_EQ(r[0].line, line) << r[0].message;
        EXPECT_TRUE(ends_with(r[0].file, "analysis_test.cu")) << r[0].file;
        EXPECT_NE(r[0].message.find("cudaErrorMisalignedAddress"), std::string::npos) << r[0].message;
        cudaDeviceReset();
        cusim::analysis::reset();
    }
};

TEST_F(VectorAccesses, MisalignedFloat4LoadIsAMemcheckErrorAndAFault) {
    for (int offset : {1, 2, 3})
        expect_misaligned([&] { sum_float4<<<2, 64>>>(zeros<float>(4096), zeros<float>(4096), offset); },
                          "Misaligned read of size 16 bytes", kMisalignedFloat4Line);
}

TEST_F(VectorAccesses, MisalignedFloat4LoadFaultsWithoutMemcheckToo) {
    cusim::analysis::set_tools("none");
    testing::internal::CaptureStderr();
    sum_float4<<<2, 64>>>(zeros<float>(4096), zeros<float>(4096), 3);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("misaligned address"), std::string::npos) << err;
    EXPECT_NE(err.find("analysis_test.cu:" + std::to_string(kMisalignedFloat4Line)), std::string::npos) << err;
    cusim::analysis::set_tools("all");
}

TEST_F(VectorAccesses, MisalignedFloat2Double2Int4LoadsAndFloat4StoreAreErrors) {
    expect_misaligned([&] { sum_float2<<<2, 64>>>(zeros<float>(4096), zeros<float>(4096), 1); },
                      "Misaligned read of size 8 bytes", kMisalignedFloat2Line);
    expect_misaligned([&] { sum_double2<<<2, 64>>>(zeros<double>(1024), zeros<double>(1024), 1); },
                      "Misaligned read of size 16 bytes", kMisalignedDouble2Line);
    expect_misaligned([&] { sum_int4<<<2, 64>>>(zeros<int>(4096), zeros<int>(4096), 2); },
                      "Misaligned read of size 16 bytes", kMisalignedInt4Line);
    expect_misaligned([&] { store_make_float4<<<2, 64>>>(zeros<float>(4096), 1); },
                      "Misaligned write of size 16 bytes", kMisalignedStoreLine);
}

TEST_F(VectorAccesses, AlignedVectorsAreOneRequestOfTheirWidthPerLane) {
    Device d(1 << 14);
    sum_float4<<<8, 256>>>(d.a, d.b, 8);  // 8 floats in: aligned, and each warp starts a sector
    sum_float2<<<8, 256>>>(d.a, d.b, 8);
    int *ia, *ib;
    ASSERT_EQ(cudaMalloc(&ia, 8192 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ib, 8192 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(ia, 0, 8192 * sizeof(int)), cudaSuccess);
    sum_int4<<<8, 256>>>(ia, ib, 0);
    double *da, *db;
    ASSERT_EQ(cudaMalloc(&da, 4096 * sizeof(double)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, 4096 * sizeof(double)), cudaSuccess);
    ASSERT_EQ(cudaMemset(da, 0, 4096 * sizeof(double)), cudaSuccess);
    sum_double2<<<8, 256>>>(da, db, 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("memcheck").empty()) << all_reports();
    const auto ms = cusim::analysis::metrics();
    const uint64_t warps = 8 * 256 / 32;
    // kernel, bytes per lane: 32 lanes x width / 32-byte sectors per load request.
    for (auto [name, width] : {std::pair<const char*, int>{"sum_float4", 16}, {"sum_float2", 8}, {"sum_int4", 16},
                               {"sum_double2", 16}}) {
        auto* m = find(ms, name);
        ASSERT_NE(m, nullptr) << name;
        EXPECT_EQ(m->global_load_requests, warps) << name;
        EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), double(width)) << name;  // 32 x width / 32
        EXPECT_EQ(m->global_bytes_read, warps * 32 * width) << name;
    }
    cudaFree(ia), cudaFree(ib), cudaFree(da), cudaFree(db);
}

TEST_F(VectorAccesses, StoreOfMakeFloat4IsOneSixteenByteStore) {
    Device d(1 << 14);
    store_make_float4<<<8, 256>>>(d.b, 0);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "store_make_float4");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_store_requests, 8u * 256 / 32);
    EXPECT_DOUBLE_EQ(m->global_store_sectors_per_request(), 16.0);
    EXPECT_EQ(m->global_bytes_written, 8u * 256 * 16);
}

TEST_F(VectorAccesses, Float4WithOneFieldUsedIsStillOneSixteenByteLoad) {
    Device d(1 << 14);
    first_of_float4<<<4, 256>>>(reinterpret_cast<const float4*>(d.a), d.b);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "first_of_float4");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_load_requests, 4u * 256 / 32);
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 16.0);
}

TEST_F(VectorAccesses, Half2IsOneFourByteAccess) {
    Device d(1 << 12);
    copy_half2<<<4, 256>>>(reinterpret_cast<const __half2*>(d.a), reinterpret_cast<__half2*>(d.b));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "copy_half2");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_load_requests, 4u * 256 / 32);
    EXPECT_EQ(m->global_store_requests, 4u * 256 / 32);
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 4.0);
    EXPECT_DOUBLE_EQ(m->global_store_sectors_per_request(), 4.0);
    // Off by one __half (2 bytes): misaligned.
    copy_half2<<<1, 32>>>(reinterpret_cast<const __half2*>(reinterpret_cast<const char*>(d.a) + 2),
                          reinterpret_cast<__half2*>(d.b));
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorMisalignedAddress);
}

// ---- racecheck --------------------------------------------------------------------------------

TEST_F(Analysis, RacecheckReportsReductionWithoutFirstBarrier) {
    Device d(256);
    reduce_missing_first_barrier<<<1, 256>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a race is a report, not a launch error
    auto r = of_tool("racecheck");
    ASSERT_FALSE(r.empty()) << all_reports();
    // Lanes run one after another, so the hazard between the store and the other thread's load is
    // seen as write-after-read (thread 0 reads s[128] before thread 128 stores it); either way the
    // report names both lines.
    bool both_lines = false;
    for (auto& rep : r) {
        EXPECT_NE(rep.kind.find("hazard on __shared__ memory"), std::string::npos) << rep.kind;
        if (rep.message.find(":" + std::to_string(kRaceWriteLine) + " ") != std::string::npos &&
            rep.message.find(":" + std::to_string(kRaceReadLine) + " ") != std::string::npos)
            both_lines = true;
    }
    EXPECT_TRUE(both_lines) << all_reports();
    // A missing barrier: the advice is a barrier, not an atomic (s[t] is updated by thread t only).
    for (auto& rep : r) {
        EXPECT_NE(rep.message.find("Hint: put __syncthreads()"), std::string::npos) << rep.message;
        EXPECT_EQ(rep.message.find("update the same word"), std::string::npos) << rep.message;
    }
    // With the first barrier in place the same reduction is clean.
    cusim::analysis::reset();
    reduce_with_barriers<<<1, 256>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
}

TEST_F(Analysis, RacecheckReportsTreeWithoutBarrierInsideItsLoop) {
    Device d(256);
    tree_without_barrier_in_loop<<<1, 256>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_FALSE(of_tool("racecheck").empty()) << "a tree reduction with no barrier between its levels races";
}

TEST_F(Analysis, RacecheckAcceptsWarpBroadcastOrderedBySyncwarp) {
    Device d(32);
    warp_broadcast_then_write<<<1, 32>>>(d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
}

// grid.sync() of a cooperative launch orders every access before it against every access after it,
// so a block reading what another warp of it wrote to shared memory before the grid barrier does
// not race. Without the barrier (use_grid_sync = 0) it does.
__global__ void shared_handoff_across_grid_sync(float* out, int use_grid_sync) {
    __shared__ float s[64];
    s[threadIdx.x] = static_cast<float>(blockIdx.x + threadIdx.x);
    if (use_grid_sync) cooperative_groups::this_grid().sync();
    out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];  // written by the other warp
}

TEST_F(Analysis, RacecheckTreatsGridSyncAsABarrierForEveryBlock) {
    Device d(4 * 64);
    int use = 1;
    void* args[] = {&d.b, &use};
    ASSERT_EQ(cudaLaunchCooperativeKernel((void*)shared_handoff_across_grid_sync, dim3(4), dim3(64), args, 0, 0), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    // Requests made after the grid barrier are counted too: one 64-thread block stores with 2 warps.
    const auto* m = find(cusim::analysis::metrics(), "shared_handoff_across_grid_sync");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_store_requests, 4u * 2u);
    EXPECT_EQ(m->shared_store_requests, 4u * 2u);
    EXPECT_EQ(m->shared_load_requests, 4u * 2u);

    cusim::analysis::reset();
    use = 0;
    ASSERT_EQ(cudaLaunchCooperativeKernel((void*)shared_handoff_across_grid_sync, dim3(4), dim3(64), args, 0, 0), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_FALSE(of_tool("racecheck").empty()) << "without grid.sync() the read races with the other warp's write";
}

// ---- initcheck --------------------------------------------------------------------------------

TEST_F(Analysis, InitcheckReportsReadOfUninitializedBuffer) {
    float *in, *out;
    ASSERT_EQ(cudaMalloc(&in, 64 * sizeof(float)), cudaSuccess);  // never written
    ASSERT_EQ(cudaMalloc(&out, 64 * sizeof(float)), cudaSuccess);
    read_uninitialized<<<2, 32>>>(in, out, 64);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto r = of_tool("initcheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_EQ(r[0].kind, "Uninitialized __global__ memory read of size 4 bytes");
    EXPECT_EQ(r[0].line, kUninitLine);
    EXPECT_EQ(r[0].count, 64u);
    // After a cudaMemset the same kernel is clean.
    cusim::analysis::reset();
    ASSERT_EQ(cudaMemset(in, 0, 64 * sizeof(float)), cudaSuccess);
    read_uninitialized<<<2, 32>>>(in, out, 64);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("initcheck").empty()) << all_reports();
}

// ---- synccheck --------------------------------------------------------------------------------

TEST_F(Analysis, SynccheckReportsBarrierInDivergentBranch) {
    Device d(32);
    barrier_in_divergent_branch<<<1, 32>>>(d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
    auto r = of_tool("synccheck");
    ASSERT_EQ(r.size(), 1u) << all_reports();
    EXPECT_NE(r[0].message.find("divergent __syncthreads"), std::string::npos) << r[0].message;
    EXPECT_NE(r[0].message.find(":" + std::to_string(kDivergentLine)), std::string::npos) << r[0].message;
    EXPECT_NE(r[0].message.find(":" + std::to_string(kDivergentLine + 4)), std::string::npos) << r[0].message;
}

// ---- No false reports on correct kernels --------------------------------------------------------

TEST_F(Analysis, CorrectKernelsAreClean) {
    const int n = 1 << 14;
    Device d(n);
    reduce_with_barriers<<<n / 256, 256>>>(d.a, d.b);
    reduce_warp_shuffle<<<n / 256, 256>>>(d.a, d.b);
    int *keys, *bins;
    ASSERT_EQ(cudaMalloc(&keys, n * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&bins, 16 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(keys, 0, n * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(bins, 0, 16 * sizeof(int)), cudaSuccess);
    histogram_atomics<<<8, 128>>>(keys, bins, n);
    local_array_and_params<<<n / 128, 128>>>(d.a, d.b, n, 0.5f);
    transpose_tile<1><<<1, dim3(32, 32)>>>(d.a, d.b);
    transpose_tile<0><<<1, dim3(32, 32)>>>(d.a, d.b);  // bank conflicts, but no error
    grid_stride_copy<<<4, 128>>>(d.a, d.b, n);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    int h[16];
    ASSERT_EQ(cudaMemcpy(h, bins, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(h[0], n);
    EXPECT_GT(find(cusim::analysis::metrics(), "histogram_atomics")->atomics, 0u);
}

// ---- Metrics ------------------------------------------------------------------------------------

TEST_F(Analysis, CoalescedCopyHasFourSectorsPerRequest) {
    const int n = 1 << 16;
    Device d(n);
    copy_coalesced<<<n / 256, 256>>>(d.a, d.b, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "copy_coalesced");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_load_requests, static_cast<uint64_t>(n / 32));
    EXPECT_EQ(m->global_store_requests, static_cast<uint64_t>(n / 32));
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 4.0);
    EXPECT_DOUBLE_EQ(m->global_store_sectors_per_request(), 4.0);
    EXPECT_EQ(m->global_bytes_read, static_cast<uint64_t>(n) * 4);
}

TEST_F(Analysis, Stride32CopyHasThirtyTwoSectorsPerRequest) {
    const int n = 1 << 16;
    Device d(n);
    copy_stride32<<<n / 256, 256>>>(d.a, d.b, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "copy_stride32");
    ASSERT_NE(m, nullptr);
    EXPECT_DOUBLE_EQ(m->global_sectors_per_request(), 32.0);
}

TEST_F(Analysis, Float4CopyIsOneSixteenByteRequestPerWarp) {
    const int n = 1 << 16;
    Device d(n);
    copy_float4<<<n / 4 / 256, 256>>>(reinterpret_cast<const float4*>(d.a), reinterpret_cast<float4*>(d.b), n / 4);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "copy_float4");
    ASSERT_NE(m, nullptr);
    // 32 lanes x 16 bytes = 512 bytes = 16 sectors per request, every byte used.
    EXPECT_EQ(m->global_load_requests, static_cast<uint64_t>(n / 4 / 32));
    EXPECT_EQ(m->global_store_requests, static_cast<uint64_t>(n / 4 / 32));
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 16.0);
    EXPECT_DOUBLE_EQ(m->global_store_sectors_per_request(), 16.0);
    EXPECT_EQ(m->global_bytes_read, static_cast<uint64_t>(n) * 4);
}

TEST_F(Analysis, LoopOverConsecutiveElementsStaysScalar) {
    const int n = 1 << 12;
    Device d(n);
    sum_four_in_a_loop<<<n / 4 / 256, 256>>>(d.a, d.b, n / 4, 4);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "sum_four_in_a_loop");
    ASSERT_NE(m, nullptr);
    // Each of the 4 loads of a warp spans 32 lanes x 16 bytes: 16 sectors for 128 bytes.
    EXPECT_EQ(m->global_load_requests, static_cast<uint64_t>(4 * (n / 4) / 32));
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 16.0);
}

TEST_F(Analysis, GridStrideLoopStaysCoalescedBeyondTheSample) {
    const int n = 1 << 16;  // 128 iterations per thread, more than the sampled 64
    Device d(n);
    grid_stride_copy<<<2, 256>>>(d.a, d.b, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "grid_stride_copy");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_load_requests, static_cast<uint64_t>(n / 32));
    EXPECT_DOUBLE_EQ(m->global_sectors_per_request(), 4.0);
}

TEST_F(Analysis, TransposeTileBankConflicts) {
    Device d(32 * 32);
    transpose_tile<0><<<1, dim3(32, 32)>>>(d.a, d.b);
    transpose_tile<1><<<1, dim3(32, 32)>>>(d.a, d.b);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto ms = cusim::analysis::metrics();
    auto* unpadded = find(ms, "transpose_tile<0>");
    auto* padded = find(ms, "transpose_tile<1>");
    ASSERT_NE(unpadded, nullptr);
    ASSERT_NE(padded, nullptr);
    EXPECT_DOUBLE_EQ(unpadded->shared_load_wavefronts_per_request(), 32.0);
    EXPECT_DOUBLE_EQ(unpadded->shared_store_wavefronts_per_request(), 1.0);
    EXPECT_DOUBLE_EQ(padded->shared_load_wavefronts_per_request(), 1.0);
    EXPECT_DOUBLE_EQ(padded->shared_store_wavefronts_per_request(), 1.0);
}

TEST_F(Analysis, LineMetricsNameTheSourceLine) {
    Device d(32 * 32);
    transpose_tile<0><<<1, dim3(32, 32)>>>(d.a, d.b);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    bool conflicted_line = false;
    for (auto& l : cusim::analysis::line_metrics("transpose_tile<0>"))
        if (l.shared_load_requests && l.shared_load_wavefronts_per_request() == 32.0) {
            conflicted_line = true;
            EXPECT_TRUE(ends_with(l.file, "analysis_test.cu")) << l.file;
        }
    EXPECT_TRUE(conflicted_line);
    EXPECT_NE(cusim::analysis::profile_text().find("32.00 wavefronts/req"), std::string::npos);
}

TEST_F(Analysis, EachAtomicCountsOnce) {
    float* sum;
    int* biggest;
    ASSERT_EQ(cudaMalloc(&sum, sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&biggest, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(sum, 0, sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(biggest, 0, sizeof(int)), cudaSuccess);
    float_and_cas_atomics<<<4, 64>>>(sum, biggest);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "float_and_cas_atomics");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->atomics, 2u * 4 * 64);
    EXPECT_EQ(m->global_atomics, 2u * 4 * 64);
    EXPECT_EQ(m->shared_atomics, 0u);
    float h = 0;
    ASSERT_EQ(cudaMemcpy(&h, sum, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(h, 256.0f);
}

TEST_F(Analysis, ToolSelectionDisablesReports) {
    cusim::analysis::set_tools("none");
    Device d(256);
    reduce_missing_first_barrier<<<1, 256>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    EXPECT_FALSE(cusim::analysis::tool_enabled("racecheck"));
}

// ---- racecheck and atomics on shared memory ------------------------------------------------------

__global__ void shared_atomic_counter(unsigned* out) {
    __shared__ unsigned count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1u);  // every thread, no barrier between them: atomics do not race
    __syncthreads();
    if (threadIdx.x == 0) *out = count;
}

constexpr int kPlainIncrementLine = __LINE__ + 6;  // the `count += 1` below
__global__ void shared_atomic_and_plain_increment(unsigned* out) {
    __shared__ unsigned count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    if (threadIdx.x == 5) {
        count += 1;  // a plain read-modify-write racing the other threads' atomics
    } else {
        atomicAdd(&count, 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) *out = count;
}

TEST_F(Analysis, RacecheckAcceptsSharedAtomicsFromManyThreads) {
    unsigned* out;
    ASSERT_EQ(cudaMalloc(&out, sizeof(unsigned)), cudaSuccess);
    shared_atomic_counter<<<2, 64>>>(out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    unsigned got = 0;
    EXPECT_EQ(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 64u);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
    auto* m = find(cusim::analysis::metrics(), "shared_atomic_counter");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->shared_atomics, 2u * 64);
    EXPECT_EQ(m->global_atomics, 0u);
    cudaFree(out);
}

TEST_F(Analysis, RacecheckReportsPlainAccessRacingSharedAtomics) {
    unsigned* out;
    ASSERT_EQ(cudaMalloc(&out, sizeof(unsigned)), cudaSuccess);
    shared_atomic_and_plain_increment<<<1, 64>>>(out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto races = of_tool("racecheck");
    ASSERT_FALSE(races.empty()) << "a plain increment racing atomicAdd on the same shared word must be reported";
    bool names_plain_line = false;
    for (const auto& r : races) names_plain_line |= r.message.find("analysis_test.cu:" + std::to_string(kPlainIncrementLine)) != std::string::npos;
    EXPECT_TRUE(names_plain_line) << all_reports();
    cudaFree(out);
}

// A block reduction through per-warp partials, called twice, without the barrier at the start of
// each call: the second call's lane 0 of a warp writes partial[warp] while other warps may still read
// the first call's partial[]. Thread 0 read partial[0] last (in the first call) and now writes it,
// which looks like an update of the word, but by another statement: the fix is that barrier.
__device__ float block_sum_without_leading_barrier(float v) {
    __shared__ float partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) partial[warp] = v;  // the write the next call races with
    __syncthreads();
    v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void two_block_sums_without_leading_barrier(const float* in, float* out) {
    const float a = block_sum_without_leading_barrier(in[threadIdx.x]);
    const float b = block_sum_without_leading_barrier(a * in[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = b;
}

TEST_F(Analysis, RacecheckAdvisesABarrierWhenAReductionReusesItsPartials) {
    Device d(256);
    two_block_sums_without_leading_barrier<<<1, 256>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto races = of_tool("racecheck");
    ASSERT_FALSE(races.empty()) << "the second reduction's partial[warp] store races with the first one's reads";
    for (const auto& r : races) {
        EXPECT_EQ(r.message.find("Use an atomic"), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("__syncthreads()"), std::string::npos) << r.message;
    }
}

// A histogram in shared memory with a plain increment: threads of the block update the same bins.
__global__ void shared_plain_histogram(const unsigned* in, unsigned* out) {
    __shared__ unsigned bins[4];
    if (threadIdx.x < 4) bins[threadIdx.x] = 0;
    __syncthreads();
    bins[in[threadIdx.x] % 4] += 1;  // not atomic: two threads with the same bin lose an update
    __syncthreads();
    if (threadIdx.x < 4) out[threadIdx.x] = bins[threadIdx.x];
}

TEST_F(Analysis, RacecheckAdvisesAnAtomicForUpdatesOfTheSameWord) {
    unsigned *in, *out;
    ASSERT_EQ(cudaMalloc(&in, 64 * sizeof(unsigned)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, 4 * sizeof(unsigned)), cudaSuccess);
    unsigned host[64];
    for (unsigned i = 0; i < 64; ++i) host[i] = i;
    ASSERT_EQ(cudaMemcpy(in, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    shared_plain_histogram<<<1, 64>>>(in, out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto races = of_tool("racecheck");
    ASSERT_FALSE(races.empty()) << "a plain increment of a shared bin by several threads races";
    for (const auto& r : races) {
        EXPECT_NE(r.message.find("two threads update the same word"), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("Use an atomic (atomicAdd"), std::string::npos) << r.message;
    }
    cudaFree(in);
    cudaFree(out);
}

// ---- racecheck: lost updates on global memory ----------------------------------------------------

// Threads of several blocks add into the same four words with a plain read and write.
__global__ void global_plain_scatter(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i % 4] += in[i];  // not atomic: on a GPU two threads with the same i % 4 lose an update
}

// Each thread updates its own word; and one block's threads update word 0 in turn, a barrier
// between any two of them.
__global__ void global_updates_ordered(const float* in, float* out, float* acc) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] += in[i];
    for (int t = 0; t < 4; ++t) {
        if (blockIdx.x == 0 && threadIdx.x == t) acc[0] += in[t];
        __syncthreads();
    }
}

TEST_F(Analysis, RacecheckReportsLostUpdatesOnGlobalMemory) {
    Device d(256);
    global_plain_scatter<<<4, 64>>>(d.a, d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // a race is a report, not a launch error
    const auto races = of_tool("racecheck");
    ASSERT_FALSE(races.empty()) << "threads adding into out[i % 4] without an atomic lose updates on a GPU";
    for (const auto& r : races) {
        EXPECT_EQ(r.kind, "Lost update on __global__ memory") << r.message;
        EXPECT_NE(r.message.find("analysis_test.cu:"), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("Use an atomic (atomicAdd)"), std::string::npos) << r.message;
    }
}

TEST_F(Analysis, RacecheckAcceptsGlobalUpdatesThatAreOwnedOrOrdered) {
    Device d(256);
    float* acc;
    ASSERT_EQ(cudaMalloc(&acc, sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(acc, 0, sizeof(float)), cudaSuccess);
    global_updates_ordered<<<4, 64>>>(d.a, d.b, acc);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    // A second launch updates the same words: the launch boundary orders them.
    global_updates_ordered<<<4, 64>>>(d.a, d.b, acc);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
    cudaFree(acc);
}

// ---- racecheck: flag protocols between blocks -----------------------------------------------------
// One block hands a value to another through global memory: the value, then a flag. Blocks take
// tickets in the order they start, and only the ticket-1 block waits (for the ticket-0 block), so
// the wait ends with any number of worker threads (CUSIM_THREADS=1 runs ticket 0 to its end first).

enum class Publish { kNoFence, kThreadfence, kThreadfenceBlock, kAtomicFlag, kAtomicFlagFenced };

constexpr int kFlagValueStoreLine = __LINE__ + 11;
constexpr int kFlagStoreLine = __LINE__ + 16;
constexpr int kAtomicFlagLine = __LINE__ + 13;
constexpr int kFlagValueReadLine = __LINE__ + 18;
__global__ void hand_over_value(unsigned* tickets, int* value, int* flag, int* out, Publish how) {
    __shared__ unsigned ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(tickets, 1u);
    __syncthreads();
    if (threadIdx.x != 0) return;
    volatile int* vflag = flag;
    if (ticket == 0) {
        *value = 42;
        if (how == Publish::kThreadfence || how == Publish::kAtomicFlagFenced) __threadfence();
        if (how == Publish::kThreadfenceBlock) __threadfence_block();
        if (how == Publish::kAtomicFlag || how == Publish::kAtomicFlagFenced) {
            atomicExch(flag, 1);
        } else {
            *vflag = 1;
        }
    } else {
        while (*vflag == 0) {}
        out[0] = *value;
    }
}

// The same hand-over with flag and value in one 64-bit word, written by one store.
__global__ void hand_over_packed_word(unsigned* tickets, unsigned long long* status, int* out) {
    __shared__ unsigned ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(tickets, 1u);
    __syncthreads();
    if (threadIdx.x != 0) return;
    volatile unsigned long long* vstatus = status;
    if (ticket == 0) {
        *vstatus = (1ull << 32) | 42u;
    } else {
        unsigned long long word;
        while (((word = *vstatus) >> 32) == 0) {}
        out[0] = static_cast<int>(word & 0xffffffffu);
    }
}

struct HandOver {
    unsigned* tickets = nullptr;
    int *value = nullptr, *flag = nullptr, *out = nullptr;
    unsigned long long* status = nullptr;
    HandOver() {
        cudaMalloc(&tickets, sizeof(unsigned));
        cudaMalloc(&value, sizeof(int));
        cudaMalloc(&flag, sizeof(int));
        cudaMalloc(&out, sizeof(int));
        cudaMalloc(&status, sizeof(unsigned long long));
        cudaMemset(tickets, 0, sizeof(unsigned));
        cudaMemset(value, 0, sizeof(int));
        cudaMemset(flag, 0, sizeof(int));
        cudaMemset(status, 0, sizeof(unsigned long long));
    }
    ~HandOver() {
        cudaFree(tickets);
        cudaFree(value);
        cudaFree(flag);
        cudaFree(out);
        cudaFree(status);
    }
    int result() const {
        int host = 0;
        cudaMemcpy(&host, out, sizeof host, cudaMemcpyDeviceToHost);
        return host;
    }
};

std::vector<cusim::analysis::Report> flag_protocol_reports() {
    std::vector<cusim::analysis::Report> out;
    for (auto& r : cusim::analysis::reports())
        if (r.tool == "racecheck" && r.kind == "Flag protocol hazard on __global__ memory") out.push_back(r);
    return out;
}

TEST_F(Analysis, RacecheckReportsAValuePublishedWithoutThreadfence) {
    HandOver h;
    hand_over_value<<<2, 32>>>(h.tickets, h.value, h.flag, h.out, Publish::kNoFence);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(h.result(), 42) << "a CPU keeps the stores in order: the value arrives";
    const auto found = flag_protocol_reports();
    ASSERT_EQ(found.size(), 1u) << all_reports();
    const std::string& m = found[0].message;
    EXPECT_EQ(found[0].line, kFlagValueReadLine) << m;
    // "value stored at FILE:LINE (address ...) and published by the flag store at FILE:LINE (address
    // ...) in block (0,0,0) with no __threadfence() between them; read at FILE:LINE by thread ..."
    const size_t stored = m.find("value stored at "), flag = m.find("published by the flag store at "),
                 read = m.find("read at ");
    ASSERT_TRUE(stored != std::string::npos && flag != std::string::npos && read != std::string::npos) << m;
    EXPECT_EQ(m.find("analysis_test.cu:" + std::to_string(kFlagValueStoreLine) + " (address", stored),
              m.find("analysis_test.cu:", stored))
        << m;
    EXPECT_EQ(m.find("analysis_test.cu:" + std::to_string(kFlagStoreLine) + " (address", flag),
              m.find("analysis_test.cu:", flag))
        << m;
    EXPECT_EQ(m.find("analysis_test.cu:" + std::to_string(kFlagValueReadLine) + " by thread", read),
              m.find("analysis_test.cu:", read))
        << m;
    EXPECT_NE(m.find("with no __threadfence() between them"), std::string::npos) << m;
    EXPECT_NE(m.find("Hint: a GPU may make the flag visible to other blocks before the value"), std::string::npos) << m;
    EXPECT_NE(m.find("call __threadfence(), then set the flag"), std::string::npos) << m;
    EXPECT_NE(m.find("pack flag and value into one 64-bit word"), std::string::npos) << m;
}

TEST_F(Analysis, RacecheckReportsAValuePublishedByAnAtomicWithoutThreadfence) {
    HandOver h;
    hand_over_value<<<2, 32>>>(h.tickets, h.value, h.flag, h.out, Publish::kAtomicFlag);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto found = flag_protocol_reports();
    ASSERT_EQ(found.size(), 1u) << all_reports();
    const std::string& m = found[0].message;
    EXPECT_NE(m.find("analysis_test.cu:" + std::to_string(kFlagValueStoreLine) + " (address"), std::string::npos) << m;
    // The atomic's own line, not cusim's atomics.h.
    EXPECT_NE(m.find("flag store at "), std::string::npos) << m;
    EXPECT_EQ(m.find("analysis_test.cu:" + std::to_string(kAtomicFlagLine) + " (address", m.find("flag store at ")),
              m.find("analysis_test.cu:", m.find("flag store at ")))
        << m;
}

TEST_F(Analysis, RacecheckReportsThreadfenceBlockAsNoFenceBetweenBlocks) {
    HandOver h;
    hand_over_value<<<2, 32>>>(h.tickets, h.value, h.flag, h.out, Publish::kThreadfenceBlock);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(flag_protocol_reports().size(), 1u) << all_reports();
}

TEST_F(Analysis, RacecheckAcceptsAValueFencedBeforeItsFlag) {
    for (Publish how : {Publish::kThreadfence, Publish::kAtomicFlagFenced}) {
        cusim::analysis::reset();
        HandOver h;
        hand_over_value<<<2, 32>>>(h.tickets, h.value, h.flag, h.out, how);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(h.result(), 42);
        EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    }
}

TEST_F(Analysis, RacecheckAcceptsFlagAndValuePackedInOneWord) {
    HandOver h;
    hand_over_packed_word<<<2, 32>>>(h.tickets, h.status, h.out);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(h.result(), 42);
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
}

// The last block to finish sums the blocks' partial results (the CUDA programming guide's
// threadfence reduction): each block stores its partial, then counts itself done with an atomic on
// a __device__ counter, which the last block resets for the next launch.
__device__ unsigned blocks_done = 0;
constexpr int kPartialStoreLine = __LINE__ + 5;
constexpr int kPartialReadLine = __LINE__ + 11;
__global__ void last_block_sums(int* partials, int* out, bool fenced) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = static_cast<int>(blockIdx.x) + 1;
        if (fenced) __threadfence();
        last = atomicInc(&blocks_done, gridDim.x) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        int sum = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) sum += partials[b];
        *out = sum;
        blocks_done = 0;
    }
}

TEST_F(Analysis, RacecheckReportsPartialsCountedDoneOnADeviceVariableWithoutThreadfence) {
    for (bool fenced : {false, true}) {
        cusim::analysis::reset();
        int *partials, *out;
        ASSERT_EQ(cudaMalloc(&partials, 8 * sizeof(int)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&out, sizeof(int)), cudaSuccess);
        last_block_sums<<<8, 32>>>(partials, out, fenced);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        int sum = 0;
        ASSERT_EQ(cudaMemcpy(&sum, out, sizeof sum, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(sum, 36);
        const auto found = flag_protocol_reports();
        if (fenced) {
            EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
        } else {
            // The last block reads the 7 partials of the other blocks (its own is no hand-over).
            ASSERT_EQ(found.size(), 1u) << all_reports();
            EXPECT_EQ(found[0].count, 7u) << found[0].message;
            EXPECT_EQ(found[0].line, kPartialReadLine) << found[0].message;
            EXPECT_NE(found[0].message.find("analysis_test.cu:" + std::to_string(kPartialStoreLine)),
                      std::string::npos)
                << found[0].message;
        }
        cudaFree(partials);
        cudaFree(out);
    }
}

// grid.sync() orders every store before it for every block: values stored, then counted with an
// atomic (no fence), then read by other blocks after the grid barrier are no hand-over.
__global__ void exchange_across_grid_sync(int* data, unsigned* count, int* out) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const unsigned b = blockIdx.x, nb = gridDim.x;
    if (threadIdx.x == 0) {
        data[b] = static_cast<int>(b);
        atomicAdd(count, 1u);
    }
    grid.sync();
    if (threadIdx.x == 0) out[b] = data[(b + 1) % nb];
}

TEST_F(Analysis, RacecheckAcceptsValuesExchangedAcrossGridSync) {
    int *data, *out;
    unsigned* count;
    ASSERT_EQ(cudaMalloc(&data, 4 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, 4 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&count, sizeof(unsigned)), cudaSuccess);
    ASSERT_EQ(cudaMemset(count, 0, sizeof(unsigned)), cudaSuccess);
    void* args[] = {&data, &count, &out};
    ASSERT_EQ(cudaLaunchCooperativeKernel(exchange_across_grid_sync, dim3(4), dim3(32), args, 0, 0), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<int> host(4);
    ASSERT_EQ(cudaMemcpy(host.data(), out, 4 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(host, (std::vector<int>{1, 2, 3, 0}));
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    cudaFree(data);
    cudaFree(out);
    cudaFree(count);
}

// ---- __half in shared memory and warp matrix functions (<mma.h>) ---------------------------------

// Neighbouring threads write neighbouring 2-byte elements: no two threads touch the same byte.
__global__ void half_tile_store(const __half* in, __half* out) {
    __shared__ __half s[64];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}

TEST_F(Analysis, RacecheckAcceptsNeighbouringHalfElementsOfDifferentThreads) {
    __half *in, *out;
    ASSERT_EQ(cudaMalloc(&in, 64 * sizeof(__half)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, 64 * sizeof(__half)), cudaSuccess);
    ASSERT_EQ(cudaMemset(in, 0, 64 * sizeof(__half)), cudaSuccess);
    half_tile_store<<<1, 64>>>(in, out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
    cudaFree(in);
    cudaFree(out);
}

// One warp loads a 16x16 __half tile (rows 32 bytes apart, ldm 16) from global memory per
// iteration: each load is one request per matrix, 16 lanes' 16-byte pieces per row pair.
__global__ void wmma_tiles_from_global(const __half* a, float* out, int tiles) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::col_major> fb;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
    nvcuda::wmma::fill_fragment(acc, 0.0f);
    for (int t = 0; t < tiles; ++t) {
        nvcuda::wmma::load_matrix_sync(fa, a + t * 256, 16);
        nvcuda::wmma::load_matrix_sync(fb, a + t * 256, 16);
        nvcuda::wmma::mma_sync(acc, fa, fb, acc);
    }
    nvcuda::wmma::store_matrix_sync(out, acc, 16, nvcuda::wmma::mem_row_major);
}

TEST_F(Analysis, WmmaTileLoadIsOneSixteenSectorRequestPerWarp) {
    const int tiles = 4;
    __half* a;
    float* out;
    ASSERT_EQ(cudaMalloc(&a, tiles * 256 * sizeof(__half)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, 256 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(a, 0, tiles * 256 * sizeof(__half)), cudaSuccess);
    wmma_tiles_from_global<<<1, 32>>>(a, out, tiles);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(cusim::analysis::reports().empty()) << all_reports();
    auto* m = find(cusim::analysis::metrics(), "wmma_tiles_from_global");
    ASSERT_NE(m, nullptr);
    // A 512-byte tile is 16 sectors, read by one request per load_matrix_sync.
    EXPECT_EQ(m->global_load_requests, static_cast<uint64_t>(2 * tiles));
    EXPECT_DOUBLE_EQ(m->global_load_sectors_per_request(), 16.0);
    EXPECT_EQ(m->global_bytes_read, static_cast<uint64_t>(2 * tiles * 512));
    // The 16x16 float result: 1024 bytes, two 16-byte stores per lane, 32 sectors in all.
    EXPECT_EQ(m->global_bytes_written, 1024u);
    EXPECT_EQ(m->global_store_sectors, 32u);
    cudaFree(a);
    cudaFree(out);
}

// A 16x16 __half tile in shared memory with rows `ldm` halves apart, loaded as a fragment: 128-byte
// rows (ldm 64) put all 16 rows in the same banks, 144-byte rows (ldm 72) spread them.
__global__ void wmma_fragment_from_shared(float* out, int ldm) {
    __shared__ __align__(32) __half tile[16 * 72];
    for (int i = threadIdx.x; i < 16 * 72; i += 32) tile[i] = __float2half(1.0f);
    __syncwarp();
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::load_matrix_sync(fa, tile, ldm);
    out[threadIdx.x] = __half2float(fa.x[0]);
}

TEST_F(Analysis, WmmaFragmentLoadsFromUnpaddedRowsConflict) {
    float* out;
    ASSERT_EQ(cudaMalloc(&out, 32 * sizeof(float)), cudaSuccess);
    double per_128[2];
    for (int k = 0; k < 2; ++k) {
        cusim::analysis::reset();
        wmma_fragment_from_shared<<<1, 32>>>(out, k == 0 ? 64 : 72);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        auto* m = find(cusim::analysis::metrics(), "wmma_fragment_from_shared");
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->shared_load_requests, 1u);  // one 16-byte load per lane
        EXPECT_EQ(m->shared_bytes_read, 512u);
        per_128[k] = m->shared_load_wavefronts_per_128_bytes();
    }
    // 16 rows in the same 8 banks: 16 wavefronts for 512 bytes; padded: the minimum, 4.
    EXPECT_DOUBLE_EQ(per_128[0], 4.0);
    EXPECT_DOUBLE_EQ(per_128[1], 1.0);
    cudaFree(out);
}

constexpr int kWmmaStoreLine = __LINE__ + 7;
constexpr int kWmmaReadLine = __LINE__ + 8;
// The warp stores its accumulator to shared memory and each lane reads another lane's elements.
__global__ void wmma_store_then_read(float* out, bool syncwarp) {
    __shared__ __align__(32) float tile[256];
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
    nvcuda::wmma::fill_fragment(acc, 1.0f);
    nvcuda::wmma::store_matrix_sync(tile, acc, 16, nvcuda::wmma::mem_row_major);
    if (syncwarp) __syncwarp();
    out[threadIdx.x] = tile[(threadIdx.x * 37) % 256];
}

TEST_F(Analysis, RacecheckReportsReadingAnotherLanesWmmaStoreWithoutSyncwarp) {
    float* out;
    ASSERT_EQ(cudaMalloc(&out, 32 * sizeof(float)), cudaSuccess);
    wmma_store_then_read<<<1, 32>>>(out, false);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto races = of_tool("racecheck");
    ASSERT_FALSE(races.empty()) << "reading other lanes' store_matrix_sync results needs a __syncwarp";
    bool names_lines = false;
    for (const auto& r : races)
        names_lines |= r.message.find(":" + std::to_string(kWmmaStoreLine) + " ") != std::string::npos &&
                       r.message.find(":" + std::to_string(kWmmaReadLine) + " ") != std::string::npos;
    EXPECT_TRUE(names_lines) << all_reports();
    cusim::analysis::reset();
    wmma_store_then_read<<<1, 32>>>(out, true);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(of_tool("racecheck").empty()) << all_reports();
    cudaFree(out);
}

}  // namespace

// ---- structs copied between memory and a call (cusim's GCC plugin) --------------------------------
//
// GCC's ThreadSanitizer pass leaves a struct read from memory straight into a by-value argument, or
// stored straight from a call's result, uninstrumented; cusim's GCC plugin makes those copies
// instrumented assignments. Without the plugin (no GCC plugin headers) these tests are skipped.

namespace {

struct Pair {
    float a, b;
};
struct Stats {  // Welford's state in a block reduction
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};

__device__ __noinline__ float sum_pair(Pair p) { return p.a + p.b; }
__device__ __noinline__ Pair make_pair(float x) { return Pair{x, 2.0f * x}; }
__device__ __noinline__ Stats merge(Stats x, Stats y) { return Stats{x.n + y.n, x.mean + y.mean, x.m2 + y.m2}; }

__global__ void pair_argument(const Pair* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sum_pair(in[i]);  // in[i] goes to the call without an assignment
}

__global__ void pair_result(const float* in, Pair* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = make_pair(in[i]);  // the call's result goes to memory without an assignment
}

__global__ void pair_argument_past_end(const Pair* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = sum_pair(in[i + n]);  // reads past the end of in
}

// The per-warp partials of a block reduction read, through a conditional, without the barrier
// that must follow their store.
__global__ void stats_reduce_missing_barrier(float* out) {
    __shared__ Stats partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    Stats v{1.0f, static_cast<float>(threadIdx.x), 0.0f};
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    const Stats r = merge(lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : Stats{}, v);
    if (threadIdx.x == 0) out[0] = r.mean;
}

class StructCopies : public Analysis {
protected:
    void SetUp() override {
#if !defined(CUSIM_TEST_GCC_PLUGIN)
        GTEST_SKIP() << "cusim's GCC plugin is not built here (no GCC plugin headers: gcc-N-plugin-dev)";
#endif
        Analysis::SetUp();
    }
};

TEST_F(StructCopies, StructArgumentReadFromMemoryIsCounted) {
    const int n = 1024;
    Pair* in = nullptr;
    float* out = nullptr;
    ASSERT_EQ(cudaMalloc(&in, n * sizeof(Pair)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(in, 0, n * sizeof(Pair)), cudaSuccess);
    pair_argument<<<n / 256, 256>>>(in, out, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "pair_argument");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_bytes_read, static_cast<uint64_t>(n) * sizeof(Pair));
    EXPECT_EQ(m->global_bytes_written, static_cast<uint64_t>(n) * sizeof(float));
    cudaFree(in);
    cudaFree(out);
}

TEST_F(StructCopies, StructResultStoredToMemoryIsCounted) {
    const int n = 1024;
    Device d(n);
    Pair* out = nullptr;
    ASSERT_EQ(cudaMalloc(&out, n * sizeof(Pair)), cudaSuccess);
    pair_result<<<n / 256, 256>>>(d.a, out, n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    auto* m = find(cusim::analysis::metrics(), "pair_result");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->global_bytes_written, static_cast<uint64_t>(n) * sizeof(Pair));
    cudaFree(out);
}

TEST_F(StructCopies, MemcheckReportsStructArgumentPastTheEnd) {
    const int n = 256;
    Pair* in = nullptr;
    float* out = nullptr;
    ASSERT_EQ(cudaMalloc(&in, n * sizeof(Pair)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemset(in, 0, n * sizeof(Pair)), cudaSuccess);
    pair_argument_past_end<<<1, n>>>(in, out, n);
    (void)cudaDeviceSynchronize();
    EXPECT_FALSE(of_tool("memcheck").empty()) << all_reports();
    cudaFree(in);
    cudaFree(out);
}

TEST_F(StructCopies, RacecheckReportsStructPartialsReadWithoutBarrier) {
    Device d(1);
    stats_reduce_missing_barrier<<<1, 256>>>(d.b);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_FALSE(of_tool("racecheck").empty()) << all_reports();
}

}  // namespace
