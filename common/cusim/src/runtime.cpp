// cusim's runtime API: device memory, copies, streams, events, device properties and CUDA's error
// semantics (per-thread last error, sticky errors after device faults).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include "internal.h"  // before any cusim header: it turns off the call-site macros
#include "cusim/checker.h"

namespace cusim::detail {
namespace {

struct Allocation {
    size_t size;
    bool device;  // false: pinned host memory (cudaMallocHost, cudaHostAlloc, cudaHostRegister)
    std::string where;
    void* base;        // start of the mapping (device) or of the malloc block (host)
    size_t map_bytes;  // device: length of the mapping
    // Virtual memory that cuMemMap placed and cuMemSetAccess opened (virtual_memory.cpp owns its
    // pages): device memory to copies and kernels, but not cudaFree's to release.
    bool mapped = false;
    bool read_only = false;  // cuMemSetAccess granted CU_MEM_ACCESS_FLAGS_PROT_READ only
};

// Device memory has its own address ranges: each cudaMalloc is a mapping that ends in an
// inaccessible guard page, the data placed right before it, so a kernel running past the end
// faults (cudaErrorIllegalAddress) even without analysis. cudaFree makes the range inaccessible
// but keeps it reserved, so no later host allocation can take its addresses: a pointer into a
// freed range is always a use after free, and a host pointer never looks like freed device memory.
constexpr size_t kFrontRedzone = 256;  // accessible bytes before the data (analysis reports them)
constexpr size_t kFillLimit = kDeviceFillLimit;  // fresh device memory up to this size is filled (allocate())
size_t page_size() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

// A non-blocking stream's operations that nothing has waited for (cusim::checker::unsynchronized_work).
struct PendingWork {
    std::string what, site;
    uint64_t first = 0;       // the stream's operation count at the first of them
    uint64_t operations = 0;
};

struct State {
    std::mutex mu;
    std::map<uintptr_t, Allocation> live;  // by start address
    std::map<uintptr_t, std::pair<size_t, std::string>> freed;  // recently freed ranges, for messages
    // Virtual address ranges that are no device memory to use, and why (label_address_range): a
    // reservation where nothing accessible is mapped, one released by cuMemAddressFree.
    std::map<uintptr_t, std::pair<size_t, std::string>> labeled;
    std::set<Stream*> streams;
    std::set<Event*> events;
    std::map<Stream*, PendingWork> pending;  // live non-blocking streams with work nothing waited for
    std::vector<PendingWork> pending_destroyed;  // the same, of streams destroyed since
    std::vector<long> own_threads;  // cusim's block-running threads (gettid)
    std::unordered_map<const void*, int> max_dyn_smem;
    std::unordered_map<const void*, int> launch_bounds;  // __launch_bounds__ (never reset: compiled in)
    std::unordered_map<const void*, std::string> kernel_names;  // kernels the rewriter saw defined
    // __device__/__constant__ variables whose address the program took with cudaGetSymbolAddress:
    // device memory for copies and memsets, by start address -> size.
    std::map<uintptr_t, size_t> symbols;
    // Kernels the program cast to void* (cusim::kernel_pointer): how to launch them through
    // argument pointers, and their names for reports.
    std::unordered_map<const void*, std::pair<PointerLaunch, const char*>> pointer_launches;
    std::atomic<int> sticky{cudaSuccess};
    // Failures injected by cusim::checker::inject_failure: api -> (calls left until it fires, error);
    // once one fired, the work the program still did (cusim::checker::end_injected_failures).
    std::map<std::string, std::pair<unsigned, cudaError_t>> injections;
    std::atomic<bool> injecting{false};  // from inject_failure to end_injected_failures (read without the lock)
    bool injection_fired = false;
    uint64_t work_after_failure = 0;
    std::string first_work_after_failure;
    size_t device_bytes = 0;
    size_t stack_limit = 1024;
    unsigned device_flags = 0;  // cudaSetDeviceFlags
    size_t heap_limit = 8 << 20;
    size_t printf_limit = 1 << 20;
    size_t persisting_l2_limit = 0;  // cudaLimitPersistingL2CacheSize
    std::map<int, cudaLaunchAttributeValue> default_stream_attributes;  // cudaStreamSetAttribute(0, ...)
};

State& state() {
    static State* s = new State;  // never destroyed: kernels may run during static destruction
    return *s;
}

thread_local cudaError_t tls_last_error = cudaSuccess;
thread_local const char* tls_site_file = nullptr;
thread_local int tls_site_line = 0;

constexpr size_t kTotalGlobalMem = size_t(80) << 30;
constexpr int kL2CacheSize = 50 << 20;
// The L2 set-aside limits an H100 SXM5 (80 GB HBM3, 50 MiB of L2) reports: 75% of the L2 may hold
// persisting lines, and an access-policy window spans at most 128 MiB less 4 KiB.
constexpr int kPersistingL2CacheMaxSize = 39321600;
constexpr int kAccessPolicyMaxWindowSize = 134213632;

std::string ptr_str(const void* p) {
    char b[32];
    std::snprintf(b, sizeof b, "%p", p);
    return b;
}

// The live allocation containing [p, p+n), or nullptr.
const Allocation* find_alloc(State& s, const void* p, size_t n, uintptr_t* base = nullptr) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = s.live.upper_bound(a);
    if (it == s.live.begin()) return nullptr;
    --it;
    if (a < it->first || a + n > it->first + it->second.size || a + n < a) return nullptr;
    if (base) *base = it->first;
    return &it->second;
}

bool in_any_alloc(State& s, const void* p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = s.live.upper_bound(a);
    if (it == s.live.begin()) return false;
    --it;
    return a < it->first + std::max<size_t>(it->second.size, 1);
}

// The label of the range containing `a` (label_address_range), or nullptr.
const std::string* range_label(State& s, uintptr_t a) {
    auto l = s.labeled.upper_bound(a);
    if (l == s.labeled.begin()) return nullptr;
    --l;
    return a < l->first + l->second.first ? &l->second.second : nullptr;
}

std::string explain_pointer(State& s, const void* p, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = s.live.upper_bound(a);
    if (it != s.live.begin()) {
        --it;
        if (it->second.read_only && a >= it->first && a + n <= it->first + it->second.size)
            return ptr_str(p) + " is mapped read-only (cuMemSetAccess granted CU_MEM_ACCESS_FLAGS_PROT_READ): "
                                "nothing may write it";
        if (a >= it->first && a < it->first + it->second.size)
            return ptr_str(p) + " + " + std::to_string(n) + " bytes runs past the end of its " +
                   std::to_string(it->second.size) + "-byte allocation (offset " + std::to_string(a - it->first) + ")";
    }
    auto f = s.freed.upper_bound(a);
    if (f != s.freed.begin()) {
        --f;
        if (a >= f->first && a < f->first + std::max<size_t>(f->second.first, 1))
            return ptr_str(p) + " points into memory already released by cudaFree" +
                   (f->second.second.empty() ? "" : " (at " + f->second.second + ")");
    }
    if (const std::string* label = range_label(s, a)) return ptr_str(p) + " is in " + *label;
    if (!p) return "the pointer is NULL";
    return ptr_str(p) + " is not device memory from cudaMalloc";
}

std::string at_site() {
    std::string s = api_site();
    return s.empty() ? "" : " at " + s;
}

cudaError_t ok() { return cudaSuccess; }

cudaError_t api_error(cudaError_t err, const char* api, const std::string& detail) {
    return report_error(err, std::string(api) + at_site() + ": " + detail);
}

// Work the program does after an injected failure fired (cusim::checker::end_injected_failures):
// called with the lock held, for each call of an injectable function and each kernel launch.
void note_work_after_failure(State& s, const std::string& what) {
    if (!s.injection_fired) return;
    if (s.work_after_failure++ == 0) s.first_work_after_failure = what;
}

// Counts this call of `api` against its pending injection (called with the lock held); the
// injected error when this is the call it was meant for, else cudaSuccess.
cudaError_t due_injection(State& s, const char* api) {
    auto it = s.injections.find(api);
    if (it == s.injections.end() || --it->second.first > 0) return cudaSuccess;
    const cudaError_t error = it->second.second;
    s.injections.erase(it);
    s.injection_fired = true;
    return error;
}

// The error injected into this call of `api` (cusim::checker::inject_failure), reported as the
// call's error; cudaSuccess when none is due.
cudaError_t injected_failure(const char* api) {
    State& s = state();
    if (!s.injecting.load(std::memory_order_acquire)) return cudaSuccess;
    cudaError_t error = cudaSuccess;
    {
        std::lock_guard<std::mutex> lk(s.mu);
        // Synchronizing is no work: code may wait for the device before it cleans up.
        if (std::strcmp(api, "cudaDeviceSynchronize") != 0) note_work_after_failure(s, api + at_site());
        if ((error = due_injection(s, api)) == cudaSuccess) return cudaSuccess;
    }
    return api_error(error, api, "a failure injected on purpose (cusim::checker::inject_failure), to test how the "
                                 "program handles it");
}

// The same for an allocation function, which also sets the pointer to NULL when it fails.
cudaError_t injected_allocation_failure(void** ptr, const char* api) {
    const cudaError_t e = injected_failure(api);
    if (e != cudaSuccess && ptr) *ptr = nullptr;
    return e;
}

// Common prologue of every API call: a sticky error poisons the context.
#define CUSIM_API_PROLOGUE()                                   \
    do {                                                       \
        if (cudaError_t s_ = sticky_error()) {                 \
            tls_last_error = s_;                               \
            tls_site_file = nullptr;                           \
            return s_;                                         \
        }                                                      \
    } while (0)

// A sticky error comes first, then an injected failure (cusim::checker::inject_failure), then the call.
#define CUSIM_ALLOCATION(api, ptr)                                                          \
    do {                                                                                    \
        CUSIM_API_PROLOGUE();                                                               \
        if (cudaError_t injected_ = injected_allocation_failure(ptr, api)) return injected_; \
    } while (0)
#define CUSIM_INJECTION_POINT(api)                                          \
    do {                                                                    \
        CUSIM_API_PROLOGUE();                                               \
        if (cudaError_t injected_ = injected_failure(api)) return injected_; \
    } while (0)

}  // namespace

cudaError_t injected_launch_failure(const char* kernel, const char* file, int line) {
    State& s = state();
    if (!s.injecting.load(std::memory_order_acquire)) return cudaSuccess;
    const std::string name = kernel ? kernel : "a kernel";
    const std::string at = std::string(file ? file : "?") + ":" + std::to_string(line);
    cudaError_t error = cudaSuccess;
    {
        std::lock_guard<std::mutex> lk(s.mu);
        note_work_after_failure(s, "the launch of " + name + " at " + at);
        if ((error = due_injection(s, cusim::checker::kKernelLaunch)) == cudaSuccess) return cudaSuccess;
    }
    // Not sticky, like a launch that asks for too many resources: cudaGetLastError() returns it once.
    return report_error(error, "launch of kernel '" + name + "' at " + at +
                                   ": a failure injected on purpose (cusim::checker::inject_failure), to test how the "
                                   "program handles it; the kernel did not run");
}

void set_api_site(const char* file, int line) noexcept {
    tls_site_file = file;
    tls_site_line = line;
}

std::string api_site() {
    if (!tls_site_file) return "";
    return std::string(tls_site_file) + ":" + std::to_string(tls_site_line);
}

bool quiet() {
    static const bool q = [] {
        const char* e = std::getenv("CUSIM_QUIET");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    return q;
}

cudaError_t report_error(cudaError_t err, const std::string& detail, bool sticky) {
    tls_last_error = err;
    tls_site_file = nullptr;
    if (sticky) {
        int expected = cudaSuccess;
        state().sticky.compare_exchange_strong(expected, err);
    }
    if (!quiet()) {
        if (detail.rfind("=========", 0) == 0)
            std::fprintf(stderr, "%s\n=========     error: %s (%s)\n", detail.c_str(), cudaGetErrorName(err),
                         cudaGetErrorString(err));
        else
            std::fprintf(stderr, "cusim: %s -> %s (%s)\n", detail.c_str(), cudaGetErrorName(err),
                         cudaGetErrorString(err));
        std::fflush(stderr);
    }
    return err;
}

cudaError_t sticky_error() { return static_cast<cudaError_t>(state().sticky.load(std::memory_order_relaxed)); }
void clear_sticky_error() { state().sticky.store(cudaSuccess); }

size_t max_dynamic_shared(const void* kernel_id) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.max_dyn_smem.find(kernel_id);
    return it == s.max_dyn_smem.end() ? kStaticSharedLimit : static_cast<size_t>(it->second);
}

std::atomic<bool> g_any_launch_bounds{false};

namespace {
/// "cusim::detail::kernel_signature() [with auto Kernel = ns::scale<256>]" -> "ns::scale<256>".
std::string name_from_signature(const char* signature) {
    const std::string s = signature ? signature : "";
    const std::string key = "Kernel = ";
    const size_t at = s.rfind(key);
    if (at == std::string::npos) return s;
    std::string name = s.substr(at + key.size());
    if (!name.empty() && name.back() == ']') name.pop_back();
    // static_cast<void (*)(int*)>(&k), as a compiler may spell a selected overload: keep the name.
    if (const size_t amp = name.rfind('&'); amp != std::string::npos && name.back() == ')')
        name = name.substr(amp + 1, name.size() - amp - 2);
    return name;
}
}  // namespace

bool register_kernel(const void* kernel, const char* signature, long long max_threads) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.kernel_names.emplace(kernel, name_from_signature(signature));
    if (max_threads > 0) {
        s.launch_bounds[kernel] = static_cast<int>(std::min<long long>(max_threads, kMaxThreadsPerBlock));
        g_any_launch_bounds.store(true, std::memory_order_release);
    }
    return true;
}

const char* registered_kernel_name(const void* kernel, const char* fallback) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.kernel_names.find(kernel);
    return it == s.kernel_names.end() ? fallback : it->second.c_str();  // entries are never erased
}

int max_threads_per_block(const void* kernel_id) {
    if (!g_any_launch_bounds.load(std::memory_order_acquire)) return kMaxThreadsPerBlock;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.launch_bounds.find(kernel_id);
    return it == s.launch_bounds.end() ? kMaxThreadsPerBlock : std::min(it->second, kMaxThreadsPerBlock);
}

bool valid_stream(cudaStream_t stream) {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return true;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    return s.streams.count(stream) != 0;
}

cudaError_t memcpy_symbol(void* dst, const void* src, size_t count, const char* what) {
    CUSIM_API_PROLOGUE();
    if (what) return api_error(cudaErrorInvalidValue, what, "offset + count runs past the end of the symbol");
    if (count) std::memmove(dst, src, count);
    tls_site_file = nullptr;
    return cudaSuccess;
}

cudaError_t symbol_query(const char* api, const char* problem) {
    CUSIM_API_PROLOGUE();
    if (problem) return api_error(cudaErrorInvalidValue, api, problem);
    tls_site_file = nullptr;
    return cudaSuccess;
}

cudaError_t symbol_address(const void* symbol, size_t size) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    size_t& known = s.symbols[reinterpret_cast<uintptr_t>(symbol)];
    known = std::max(known, size);
    tls_site_file = nullptr;
    return cudaSuccess;
}

struct Stream {
    unsigned flags;
    int priority = 0;
    uint64_t operations = 0;  // enqueued so far (what an event recorded on it covers)
    std::map<int, cudaLaunchAttributeValue> attributes;  // cudaStreamSetAttribute, by attribute id
};
struct Event {
    unsigned flags;
    bool recorded = false;
    std::chrono::steady_clock::time_point when;
    Stream* stream = nullptr;  // the user stream it was last recorded on, if any
    uint64_t covers = 0;       // that stream's operations up to the record
};

}  // namespace cusim::detail

using namespace cusim::detail;

const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
#define N(x) \
    case x: return #x;
        N(cudaSuccess) N(cudaErrorInvalidValue) N(cudaErrorMemoryAllocation) N(cudaErrorInitializationError)
        N(cudaErrorCudartUnloading) N(cudaErrorInvalidConfiguration) N(cudaErrorInvalidPitchValue)
        N(cudaErrorInvalidSymbol) N(cudaErrorInvalidDevicePointer) N(cudaErrorInvalidMemcpyDirection)
        N(cudaErrorNotYetImplemented) N(cudaErrorInsufficientDriver) N(cudaErrorInvalidDeviceFunction)
        N(cudaErrorNoDevice) N(cudaErrorInvalidDevice) N(cudaErrorInvalidResourceHandle) N(cudaErrorNotReady)
        N(cudaErrorIllegalAddress) N(cudaErrorLaunchOutOfResources) N(cudaErrorLaunchTimeout) N(cudaErrorAssert)
        N(cudaErrorHostMemoryAlreadyRegistered) N(cudaErrorHostMemoryNotRegistered)
        N(cudaErrorHardwareStackError) N(cudaErrorIllegalInstruction) N(cudaErrorMisalignedAddress)
        N(cudaErrorLaunchFailure) N(cudaErrorCooperativeLaunchTooLarge) N(cudaErrorNotPermitted) N(cudaErrorNotSupported) N(cudaErrorUnknown)
        N(cudaErrorIllegalState) N(cudaErrorStreamCaptureUnsupported) N(cudaErrorStreamCaptureInvalidated)
        N(cudaErrorStreamCaptureMerge) N(cudaErrorStreamCaptureUnmatched) N(cudaErrorStreamCaptureUnjoined)
        N(cudaErrorStreamCaptureIsolation) N(cudaErrorStreamCaptureImplicit) N(cudaErrorCapturedEvent)
        N(cudaErrorStreamCaptureWrongThread) N(cudaErrorGraphExecUpdateFailure)
#undef N
    }
    return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInitializationError: return "initialization error";
        case cudaErrorCudartUnloading: return "driver shutting down";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidPitchValue: return "invalid pitch argument";
        case cudaErrorInvalidSymbol: return "invalid device symbol";
        case cudaErrorInvalidDevicePointer: return "invalid device pointer";
        case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
        case cudaErrorNotYetImplemented: return "feature not yet implemented";
        case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
        case cudaErrorInvalidDeviceFunction: return "invalid device function";
        case cudaErrorNoDevice: return "no CUDA-capable device is detected";
        case cudaErrorInvalidDevice: return "invalid device ordinal";
        case cudaErrorInvalidResourceHandle: return "invalid resource handle";
        case cudaErrorNotReady: return "device not ready";
        case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
        case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
        case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
        case cudaErrorAssert: return "device-side assert triggered";
        case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
        case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
        case cudaErrorHardwareStackError: return "hardware stack error";
        case cudaErrorIllegalInstruction: return "an illegal instruction was encountered";
        case cudaErrorMisalignedAddress: return "misaligned address";
        case cudaErrorLaunchFailure: return "unspecified launch failure";
        case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
        case cudaErrorNotPermitted: return "operation not permitted";
        case cudaErrorNotSupported: return "operation not supported";
        case cudaErrorUnknown: return "unknown error";
        case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
        case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
        case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
        case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
        case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
        case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
        case cudaErrorStreamCaptureIsolation:
            return "dependency created on uncaptured work in another stream";
        case cudaErrorStreamCaptureImplicit:
            return "operation would make the legacy stream depend on a capturing blocking stream";
        case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
        case cudaErrorStreamCaptureWrongThread:
            return "attempt to terminate a thread-local capture sequence from another thread";
        case cudaErrorGraphExecUpdateFailure:
            return "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update";
    }
    return "unrecognized error code";
}

cudaError_t cudaGetLastError() {
    if (cudaError_t s = sticky_error()) return s;
    cudaError_t e = tls_last_error;
    tls_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError() {
    if (cudaError_t s = sticky_error()) return s;
    return tls_last_error;
}

cudaError_t cudaGetDeviceCount(int* count) {
    if (!count) return api_error(cudaErrorInvalidValue, "cudaGetDeviceCount", "count is NULL");
    *count = 1;
    return ok();
}

cudaError_t cudaSetDevice(int device) {
    CUSIM_API_PROLOGUE();
    if (device != 0)
        return api_error(cudaErrorInvalidDevice, "cudaSetDevice",
                         "device " + std::to_string(device) + " does not exist; cusim provides one device, 0");
    return ok();
}

cudaError_t cudaGetDevice(int* device) {
    if (!device) return api_error(cudaErrorInvalidValue, "cudaGetDevice", "device is NULL");
    *device = 0;
    return ok();
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
    if (!p) return api_error(cudaErrorInvalidValue, "cudaGetDeviceProperties", "prop is NULL");
    if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaGetDeviceProperties", "no such device");
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "cusim virtual device (sm_90 limits, runs on the CPU)");
    p->totalGlobalMem = kTotalGlobalMem;
    p->sharedMemPerBlock = kStaticSharedLimit;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = kMaxThreadsPerBlock;
    p->maxThreadsDim[0] = 1024;
    p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = 65535;
    p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->multiProcessorCount = kNumSMs;
    p->concurrentKernels = 1;
    p->asyncEngineCount = 1;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 5120;
    p->l2CacheSize = kL2CacheSize;
    p->persistingL2CacheMaxSize = kPersistingL2CacheMaxSize;
    p->accessPolicyMaxWindowSize = kAccessPolicyMaxWindowSize;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxBlocksPerMultiProcessor = 32;
    p->sharedMemPerMultiprocessor = 233472;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = kDynamicSharedOptinLimit;
    p->reservedSharedMemPerBlock = 1024;
    // Texture and surface limits of compute capability 9.0 (the CUDA C++ Programming Guide's table of
    // technical specifications): reported, although cusim has no texture unit (textures are not
    // supported, docs/cusim.md).
    p->texturePitchAlignment = 32;
    p->maxTexture1D = 131072;
    p->maxTexture1DMipmap = 32768;
    p->maxTexture2D[0] = 131072, p->maxTexture2D[1] = 65536;
    p->maxTexture2DMipmap[0] = 32768, p->maxTexture2DMipmap[1] = 32768;
    p->maxTexture2DLinear[0] = 131072, p->maxTexture2DLinear[1] = 65000, p->maxTexture2DLinear[2] = 2097120;
    p->maxTexture2DGather[0] = 32768, p->maxTexture2DGather[1] = 32768;
    p->maxTexture3D[0] = p->maxTexture3D[1] = p->maxTexture3D[2] = 16384;
    p->maxTexture3DAlt[0] = 8192, p->maxTexture3DAlt[1] = 8192, p->maxTexture3DAlt[2] = 32768;
    p->maxTextureCubemap = 32768;
    p->maxTexture1DLayered[0] = 32768, p->maxTexture1DLayered[1] = 2048;
    p->maxTexture2DLayered[0] = 32768, p->maxTexture2DLayered[1] = 32768, p->maxTexture2DLayered[2] = 2048;
    p->maxTextureCubemapLayered[0] = 32768, p->maxTextureCubemapLayered[1] = 2046;
    p->maxSurface1D = 32768;
    p->maxSurface2D[0] = 131072, p->maxSurface2D[1] = 65536;
    p->maxSurface3D[0] = p->maxSurface3D[1] = p->maxSurface3D[2] = 16384;
    p->maxSurface1DLayered[0] = 32768, p->maxSurface1DLayered[1] = 2048;
    p->maxSurface2DLayered[0] = 32768, p->maxSurface2DLayered[1] = 32768, p->maxSurface2DLayered[2] = 2048;
    p->maxSurfaceCubemap = 32768;
    p->maxSurfaceCubemapLayered[0] = 32768, p->maxSurfaceCubemapLayered[1] = 2046;
    p->surfaceAlignment = 512;
    p->ECCEnabled = 1;
    p->streamPrioritiesSupported = 1;  // cudaStreamCreateWithPriority and cudaDeviceGetStreamPriorityRange
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->concurrentManagedAccess = 1;  // managed memory is host memory: host and kernels may use it at once
    p->computePreemptionSupported = 1;
    p->directManagedMemAccessFromHost = 1;
    p->canMapHostMemory = 1;
    p->deviceNumaId = -1;
    p->hostNumaId = -1;
    p->memoryPoolsSupported = 1;  // stream-ordered allocation and its pools (graph.cpp)
    // Everything else is 0: no integrated memory, no ECC error reporting beyond the flag, no host
    // registration, no clusters, no IPC, no NUMA or MPS (cusim models none of these).
    return ok();
}

namespace cusim::detail {
bool device_attribute(cudaDeviceAttr attr, int* value) {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    auto i32 = [](size_t v) { return v > 2147483647u ? 2147483647 : static_cast<int>(v); };
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
        case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
        case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
        case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
        case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
        case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
        case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *value = i32(p.sharedMemPerBlock); break;
        case cudaDevAttrTotalConstantMemory: *value = i32(p.totalConstMem); break;
        case cudaDevAttrWarpSize: *value = p.warpSize; break;
        case cudaDevAttrMaxPitch: *value = i32(p.memPitch); break;
        case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
        case cudaDevAttrClockRate: *value = 1980000; break;  // kHz: an H100 SXM's maximum SM clock
        case cudaDevAttrTextureAlignment: *value = i32(p.textureAlignment); break;
        case cudaDevAttrGpuOverlap: *value = p.asyncEngineCount > 0; break;
        case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
        case cudaDevAttrKernelExecTimeout: *value = 0; break;
        case cudaDevAttrIntegrated: *value = p.integrated; break;
        case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; break;
        case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; break;
        case cudaDevAttrMaxTexture1DWidth: *value = p.maxTexture1D; break;
        case cudaDevAttrMaxTexture2DWidth: *value = p.maxTexture2D[0]; break;
        case cudaDevAttrMaxTexture2DHeight: *value = p.maxTexture2D[1]; break;
        case cudaDevAttrMaxTexture3DWidth: *value = p.maxTexture3D[0]; break;
        case cudaDevAttrMaxTexture3DHeight: *value = p.maxTexture3D[1]; break;
        case cudaDevAttrMaxTexture3DDepth: *value = p.maxTexture3D[2]; break;
        case cudaDevAttrMaxTexture2DLayeredWidth: *value = p.maxTexture2DLayered[0]; break;
        case cudaDevAttrMaxTexture2DLayeredHeight: *value = p.maxTexture2DLayered[1]; break;
        case cudaDevAttrMaxTexture2DLayeredLayers: *value = p.maxTexture2DLayered[2]; break;
        case cudaDevAttrSurfaceAlignment: *value = i32(p.surfaceAlignment); break;
        case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
        case cudaDevAttrEccEnabled: *value = p.ECCEnabled; break;
        case cudaDevAttrPciBusId: *value = p.pciBusID; break;
        case cudaDevAttrPciDeviceId: *value = p.pciDeviceID; break;
        case cudaDevAttrTccDriver: *value = p.tccDriver; break;
        case cudaDevAttrMemoryClockRate: *value = 2619000; break;  // kHz: an H100 SXM's HBM3
        case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
        case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
        case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
        case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
        case cudaDevAttrMaxTexture1DLayeredWidth: *value = p.maxTexture1DLayered[0]; break;
        case cudaDevAttrMaxTexture1DLayeredLayers: *value = p.maxTexture1DLayered[1]; break;
        case cudaDevAttrMaxTexture2DGatherWidth: *value = p.maxTexture2DGather[0]; break;
        case cudaDevAttrMaxTexture2DGatherHeight: *value = p.maxTexture2DGather[1]; break;
        case cudaDevAttrMaxTexture3DWidthAlt: *value = p.maxTexture3DAlt[0]; break;
        case cudaDevAttrMaxTexture3DHeightAlt: *value = p.maxTexture3DAlt[1]; break;
        case cudaDevAttrMaxTexture3DDepthAlt: *value = p.maxTexture3DAlt[2]; break;
        case cudaDevAttrPciDomainId: *value = p.pciDomainID; break;
        case cudaDevAttrTexturePitchAlignment: *value = i32(p.texturePitchAlignment); break;
        case cudaDevAttrMaxTextureCubemapWidth: *value = p.maxTextureCubemap; break;
        case cudaDevAttrMaxTextureCubemapLayeredWidth: *value = p.maxTextureCubemapLayered[0]; break;
        case cudaDevAttrMaxTextureCubemapLayeredLayers: *value = p.maxTextureCubemapLayered[1]; break;
        case cudaDevAttrMaxSurface1DWidth: *value = p.maxSurface1D; break;
        case cudaDevAttrMaxSurface2DWidth: *value = p.maxSurface2D[0]; break;
        case cudaDevAttrMaxSurface2DHeight: *value = p.maxSurface2D[1]; break;
        case cudaDevAttrMaxSurface3DWidth: *value = p.maxSurface3D[0]; break;
        case cudaDevAttrMaxSurface3DHeight: *value = p.maxSurface3D[1]; break;
        case cudaDevAttrMaxSurface3DDepth: *value = p.maxSurface3D[2]; break;
        case cudaDevAttrMaxSurface1DLayeredWidth: *value = p.maxSurface1DLayered[0]; break;
        case cudaDevAttrMaxSurface1DLayeredLayers: *value = p.maxSurface1DLayered[1]; break;
        case cudaDevAttrMaxSurface2DLayeredWidth: *value = p.maxSurface2DLayered[0]; break;
        case cudaDevAttrMaxSurface2DLayeredHeight: *value = p.maxSurface2DLayered[1]; break;
        case cudaDevAttrMaxSurface2DLayeredLayers: *value = p.maxSurface2DLayered[2]; break;
        case cudaDevAttrMaxSurfaceCubemapWidth: *value = p.maxSurfaceCubemap; break;
        case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *value = p.maxSurfaceCubemapLayered[0]; break;
        case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *value = p.maxSurfaceCubemapLayered[1]; break;
        case cudaDevAttrMaxTexture1DLinearWidth: *value = 268435456; break;
        case cudaDevAttrMaxTexture2DLinearWidth: *value = p.maxTexture2DLinear[0]; break;
        case cudaDevAttrMaxTexture2DLinearHeight: *value = p.maxTexture2DLinear[1]; break;
        case cudaDevAttrMaxTexture2DLinearPitch: *value = p.maxTexture2DLinear[2]; break;
        case cudaDevAttrMaxTexture2DMipmappedWidth: *value = p.maxTexture2DMipmap[0]; break;
        case cudaDevAttrMaxTexture2DMipmappedHeight: *value = p.maxTexture2DMipmap[1]; break;
        case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
        case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
        case cudaDevAttrMaxTexture1DMipmappedWidth: *value = p.maxTexture1DMipmap; break;
        case cudaDevAttrStreamPrioritiesSupported: *value = p.streamPrioritiesSupported; break;
        case cudaDevAttrGlobalL1CacheSupported: *value = p.globalL1CacheSupported; break;
        case cudaDevAttrLocalL1CacheSupported: *value = p.localL1CacheSupported; break;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = i32(p.sharedMemPerMultiprocessor); break;
        case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
        case cudaDevAttrManagedMemory: *value = p.managedMemory; break;
        case cudaDevAttrIsMultiGpuBoard: *value = p.isMultiGpuBoard; break;
        case cudaDevAttrMultiGpuBoardGroupID: *value = p.multiGpuBoardGroupID; break;
        case cudaDevAttrHostNativeAtomicSupported: *value = p.hostNativeAtomicSupported; break;
        case cudaDevAttrSingleToDoublePrecisionPerfRatio: *value = 2; break;  // sm_90: fp64 at half the fp32 rate
        case cudaDevAttrPageableMemoryAccess: *value = p.pageableMemoryAccess; break;
        case cudaDevAttrConcurrentManagedAccess: *value = p.concurrentManagedAccess; break;
        case cudaDevAttrComputePreemptionSupported: *value = p.computePreemptionSupported; break;
        case cudaDevAttrCanUseHostPointerForRegisteredMem: *value = p.canUseHostPointerForRegisteredMem; break;
        case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = i32(p.sharedMemPerBlockOptin); break;
        case cudaDevAttrCanFlushRemoteWrites: *value = 0; break;
        case cudaDevAttrHostRegisterSupported: *value = p.hostRegisterSupported; break;
        case cudaDevAttrPageableMemoryAccessUsesHostPageTables: *value = p.pageableMemoryAccessUsesHostPageTables; break;
        case cudaDevAttrDirectManagedMemAccessFromHost: *value = p.directManagedMemAccessFromHost; break;
        case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
        case cudaDevAttrMaxPersistingL2CacheSize: *value = p.persistingL2CacheMaxSize; break;
        case cudaDevAttrMaxAccessPolicyWindowSize: *value = p.accessPolicyMaxWindowSize; break;
        case cudaDevAttrReservedSharedMemoryPerBlock: *value = i32(p.reservedSharedMemPerBlock); break;
        case cudaDevAttrSparseCudaArraySupported: *value = p.sparseCudaArraySupported; break;
        case cudaDevAttrHostRegisterReadOnlySupported: *value = p.hostRegisterReadOnlySupported; break;
        case cudaDevAttrTimelineSemaphoreInteropSupported: *value = p.timelineSemaphoreInteropSupported; break;
        case cudaDevAttrMemoryPoolsSupported: *value = p.memoryPoolsSupported; break;
        case cudaDevAttrGPUDirectRDMASupported: *value = p.gpuDirectRDMASupported; break;
        case cudaDevAttrGPUDirectRDMAFlushWritesOptions: *value = static_cast<int>(p.gpuDirectRDMAFlushWritesOptions); break;
        case cudaDevAttrGPUDirectRDMAWritesOrdering: *value = p.gpuDirectRDMAWritesOrdering; break;
        case cudaDevAttrMemoryPoolSupportedHandleTypes: *value = static_cast<int>(p.memoryPoolSupportedHandleTypes); break;
        case cudaDevAttrClusterLaunch: *value = p.clusterLaunch; break;
        case cudaDevAttrDeferredMappingCudaArraySupported: *value = p.deferredMappingCudaArraySupported; break;
        case cudaDevAttrIpcEventSupport: *value = p.ipcEventSupported; break;
        case cudaDevAttrMemSyncDomainCount: *value = 1; break;  // one domain: cusim has no memory sync domains
        case cudaDevAttrNumaConfig: *value = p.deviceNumaConfig; break;
        case cudaDevAttrNumaId: *value = p.deviceNumaId; break;
        case cudaDevAttrMpsEnabled: *value = p.mpsEnabled; break;
        case cudaDevAttrHostNumaId: *value = p.hostNumaId; break;
        case cudaDevAttrD3D12CigSupported: *value = 0; break;
        case cudaDevAttrVulkanCigSupported: *value = 0; break;
        case cudaDevAttrGpuPciDeviceId: *value = static_cast<int>(p.gpuPciDeviceID); break;
        case cudaDevAttrGpuPciSubsystemId: *value = static_cast<int>(p.gpuPciSubsystemID); break;
        case cudaDevAttrHostNumaMemoryPoolsSupported: *value = 0; break;
        case cudaDevAttrHostNumaMultinodeIpcSupported: *value = p.hostNumaMultinodeIpcSupported; break;
        case cudaDevAttrHostMemoryPoolsSupported: *value = 0; break;
        case cudaDevAttrOnlyPartialHostNativeAtomicSupported: *value = 0; break;
        default: return false;
    }
    return true;
}
}  // namespace cusim::detail

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    if (!value) return api_error(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "value is NULL");
    if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaDeviceGetAttribute", "no such device");
    if (!device_attribute(attr, value))
        return api_error(cudaErrorInvalidValue, "cudaDeviceGetAttribute",
                         "attribute " + std::to_string(static_cast<int>(attr)) + " is not a device attribute of CUDA 13 "
                         "(a reserved or unknown value)");
    return ok();
}

cudaError_t cudaDeviceSynchronize() {
    CUSIM_INJECTION_POINT("cudaDeviceSynchronize");
    cusim::checker::clear_unsynchronized_work();  // every stream waited for
    return ok();  // launches and copies complete before they return
}

cudaError_t cudaDeviceReset() {
    State& s = state();
    reset_virtual_memory();  // before the loop below: it leaves no mapped range in s.live
    {
        std::lock_guard<std::mutex> lk(s.mu);
        for (auto& [addr, a] : s.live) {
            if (a.device && analysis_hooks::instrumented) analysis_hooks::on_free(reinterpret_cast<void*>(addr), a.size);
            if (a.device)
                mmap(a.base, a.map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
            else
                std::free(a.base);
        }
        s.live.clear();
        s.freed.clear();
        for (Stream* st : s.streams) delete st;
        s.streams.clear();
        s.pending.clear();
        s.pending_destroyed.clear();
        for (Event* ev : s.events) delete ev;
        s.events.clear();
        s.max_dyn_smem.clear();
        s.device_bytes = 0;
        s.persisting_l2_limit = 0;
        s.default_stream_attributes.clear();
    }
    reset_arrays_and_objects();
    reset_graphs();
    clear_sticky_error();
    tls_last_error = cudaSuccess;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    switch (limit) {
        case cudaLimitStackSize: s.stack_limit = value; break;
        case cudaLimitPrintfFifoSize: s.printf_limit = value; break;
        case cudaLimitMallocHeapSize: s.heap_limit = value; break;
        // A hint CUDA may clamp (cuda_runtime_api.h): the set-aside never exceeds what the device has.
        case cudaLimitPersistingL2CacheSize:
            s.persisting_l2_limit = std::min<size_t>(value, kPersistingL2CacheMaxSize);
            break;
        default: return api_error(cudaErrorInvalidValue, "cudaDeviceSetLimit", "unknown limit");
    }
    return ok();
}

cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
    if (!value) return api_error(cudaErrorInvalidValue, "cudaDeviceGetLimit", "value is NULL");
    State& s = state();
    switch (limit) {
        case cudaLimitStackSize: *value = s.stack_limit; break;
        case cudaLimitPrintfFifoSize: *value = s.printf_limit; break;
        case cudaLimitMallocHeapSize: *value = s.heap_limit; break;
        case cudaLimitPersistingL2CacheSize: *value = s.persisting_l2_limit; break;
        default: return api_error(cudaErrorInvalidValue, "cudaDeviceGetLimit", "unknown limit");
    }
    return ok();
}

cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return ok(); }
cudaError_t cudaDriverGetVersion(int* v) {
    if (!v) return api_error(cudaErrorInvalidValue, "cudaDriverGetVersion", "version is NULL");
    *v = CUDART_VERSION;
    return ok();
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    if (!v) return api_error(cudaErrorInvalidValue, "cudaRuntimeGetVersion", "version is NULL");
    *v = CUDART_VERSION;
    return ok();
}

// ---- Memory ------------------------------------------------------------------------------------

namespace {
cudaError_t allocate(void** ptr, size_t size, bool device, const char* api) {
    CUSIM_API_PROLOGUE();
    if (!ptr) return api_error(cudaErrorInvalidValue, api, "the output pointer is NULL");
    State& s = state();
    const std::string where = api_site();
    // Compared without overflow: a negative count converted to size_t is close to 2^64 bytes.
    if (device && size > kTotalGlobalMem - s.device_bytes) {
        *ptr = nullptr;
        return api_error(cudaErrorMemoryAllocation, api,
                         std::to_string(size) + " bytes requested, more than the virtual device's 80 GiB");
    }
    if (!device && size > kTotalGlobalMem) {  // the rounding below must not overflow either
        *ptr = nullptr;
        return api_error(cudaErrorMemoryAllocation, api, "out of host memory for " + std::to_string(size) + " bytes");
    }
    // 256-byte alignment, as cudaMalloc guarantees; at least one byte so every allocation has an address.
    const size_t bytes = ((std::max<size_t>(size, 1) + 255) / 256) * 256;
    void* base = nullptr;
    void* p = nullptr;
    size_t map_bytes = 0;
    if (device) {
        const size_t pg = page_size();
        map_bytes = ((kFrontRedzone + bytes + pg - 1) / pg) * pg + pg;
        void* m = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED) {
            base = m;
            char* guard = static_cast<char*>(m) + map_bytes - pg;
            mprotect(guard, pg, PROT_NONE);
            p = guard - bytes;
            // A GPU's cudaMalloc returns memory with whatever it held before, not zeros: fresh
            // device memory holds all-ones bytes (NaN as float, half and bf16; -1 as an integer),
            // so a kernel that adds into memory nobody cleared gets a wrong result here too, as it
            // may on a GPU. initcheck still sees these bytes as uninitialized. Above kFillLimit the
            // pages stay untouched (zero, mapped on first use): filling them would commit all of
            // an allocation's memory at once.
            if (size <= kFillLimit) std::memset(p, 0xFF, size);
        }
    } else {
        base = p = std::aligned_alloc(256, bytes);
    }
    if (!p) {
        *ptr = nullptr;
        return api_error(cudaErrorMemoryAllocation, api, "out of host memory for " + std::to_string(size) + " bytes");
    }
    std::lock_guard<std::mutex> lk(s.mu);
    s.live[reinterpret_cast<uintptr_t>(p)] = Allocation{size, device, where, base, map_bytes};
    s.freed.erase(reinterpret_cast<uintptr_t>(p));
    if (device) s.device_bytes += size;
    if (device && analysis_hooks::instrumented) analysis_hooks::on_alloc(p, size);
    *ptr = p;
    tls_site_file = nullptr;
    return cudaSuccess;
}

cudaError_t release(void* ptr, bool device, const char* api) {
    CUSIM_API_PROLOGUE();
    if (!ptr) return ok();
    State& s = state();
    std::unique_lock<std::mutex> lk(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == s.live.end() || it->second.device != device || it->second.mapped) {
        std::string why = explain_pointer(s, ptr, 0);
        if (it != s.live.end() && it->second.mapped)
            why = ptr_str(ptr) + " is virtual memory that cuMemMap mapped: unmap it with cuMemUnmap";
        else if (it != s.live.end())
            why = device ? ptr_str(ptr) + " is pinned host memory: release it with cudaFreeHost"
                         : ptr_str(ptr) + " is device memory: release it with cudaFree";
        else if (in_any_alloc(s, ptr))
            why = ptr_str(ptr) + " points inside an allocation, not at its start";
        lk.unlock();
        return api_error(cudaErrorInvalidValue, api, why);
    }
    if (device) s.device_bytes -= it->second.size;
    // Only device ranges stay reserved after release; freed pinned host memory goes back to malloc,
    // and later host allocations may legitimately reuse its addresses.
    if (device) s.freed[it->first] = {it->second.size, api_site()};
    void* base = it->second.base;
    const size_t size = it->second.size, map_bytes = it->second.map_bytes;
    s.live.erase(it);
    lk.unlock();
    if (device && analysis_hooks::instrumented) analysis_hooks::on_free(ptr, size);
    if (device) {  // release the memory, keep the addresses reserved and inaccessible
        mmap(base, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    } else {
        std::free(base);
    }
    tls_site_file = nullptr;
    return cudaSuccess;
}

enum class Space { Host, Device, Pinned, Invalid };

// Classifies [p, p+n): inside one live device allocation, inside pinned host memory, plain host
// memory, or an invalid device range (freed, running past an allocation's end, a virtual address
// range with nothing accessible mapped, or, when the caller writes it, memory mapped read-only).
Space classify(State& s, const void* p, size_t n, bool written = false) {
    if (const Allocation* a = find_alloc(s, p, n)) {
        if (written && a->read_only) return Space::Invalid;
        return a->device ? Space::Device : Space::Pinned;
    }
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    auto sym = s.symbols.upper_bound(addr);
    if (sym != s.symbols.begin()) {
        --sym;
        if (addr + n >= addr && addr + n <= sym->first + sym->second) return Space::Device;
    }
    if (in_any_alloc(s, p)) return Space::Invalid;
    auto f = s.freed.upper_bound(addr);
    if (f != s.freed.begin()) {
        --f;
        if (addr >= f->first && addr < f->first + std::max<size_t>(f->second.first, 1)) return Space::Invalid;
    }
    if (range_label(s, addr)) return Space::Invalid;
    return Space::Host;
}

cudaError_t check_copy(const void* dst, const void* src, size_t count, cudaMemcpyKind kind, const char* api) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (count == 0) return cudaSuccess;
    if (!dst || !src)
        return report_error(cudaErrorInvalidValue, std::string(api) + at_site() + ": " + (dst ? "src" : "dst") + " is NULL");
    const Space ds = classify(s, dst, count, true), ss = classify(s, src, count);
    auto bad = [&](const char* which, const void* p) {
        return report_error(cudaErrorInvalidValue,
                            std::string(api) + at_site() + ": " + which + " " + explain_pointer(s, p, count));
    };
    const bool dst_dev_expected = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_dev_expected = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (ds == Space::Invalid) return bad("dst", dst);
    if (ss == Space::Invalid) return bad("src", src);
    if (kind == cudaMemcpyDefault) return cudaSuccess;
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return report_error(cudaErrorInvalidMemcpyDirection, std::string(api) + at_site() + ": unknown cudaMemcpyKind");
    if (dst_dev_expected && ds != Space::Device) return bad("dst", dst);
    if (src_dev_expected && ss != Space::Device) return bad("src", src);
    if (!dst_dev_expected && ds == Space::Device)
        return report_error(cudaErrorInvalidValue, std::string(api) + at_site() + ": dst " + ptr_str(dst) +
                                                       " is device memory but the copy kind says host");
    if (!src_dev_expected && ss == Space::Device)
        return report_error(cudaErrorInvalidValue, std::string(api) + at_site() + ": src " + ptr_str(src) +
                                                       " is device memory but the copy kind says host");
    return cudaSuccess;
}
}  // namespace

cudaError_t cudaMalloc(void** ptr, size_t size) {
    CUSIM_ALLOCATION("cudaMalloc", ptr);
    return allocate(ptr, size, true, "cudaMalloc");
}
cudaError_t cudaMallocManaged(void** ptr, size_t size, unsigned int) {
    CUSIM_ALLOCATION("cudaMallocManaged", ptr);
    return allocate(ptr, size, true, "cudaMallocManaged");
}
cudaError_t cudaFree(void* ptr) { return release(ptr, true, "cudaFree"); }
cudaError_t cudaMallocHost(void** ptr, size_t size) {
    CUSIM_ALLOCATION("cudaMallocHost", ptr);
    return allocate(ptr, size, false, "cudaMallocHost");
}
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
    CUSIM_ALLOCATION("cudaHostAlloc", ptr);
    return allocate(ptr, size, false, "cudaHostAlloc");
}
cudaError_t cudaFreeHost(void* ptr) {
    {
        State& s = state();
        std::lock_guard<std::mutex> lk(s.mu);
        auto it = s.live.find(reinterpret_cast<uintptr_t>(ptr));
        if (ptr && it != s.live.end() && !it->second.device && !it->second.base)
            return api_error(cudaErrorInvalidValue, "cudaFreeHost",
                             ptr_str(ptr) + " was registered with cudaHostRegister: release it with cudaHostUnregister");
    }
    return release(ptr, false, "cudaFreeHost");
}

cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (!ptr || size == 0 || (flags & ~0x0fu))
        return api_error(cudaErrorInvalidValue, "cudaHostRegister", "ptr is NULL, size is 0 or the flags are unknown");
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (in_any_alloc(s, ptr) || in_any_alloc(s, static_cast<char*>(ptr) + size - 1))
        return api_error(cudaErrorHostMemoryAlreadyRegistered, "cudaHostRegister",
                         ptr_str(ptr) + " overlaps memory that is already pinned or is device memory");
    // base nullptr: the memory is the caller's, never freed here (cudaHostUnregister forgets it).
    s.live[reinterpret_cast<uintptr_t>(ptr)] = Allocation{size, false, api_site(), nullptr, 0};
    return ok();
}

cudaError_t cudaHostUnregister(void* ptr) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(ptr));
    if (!ptr || it == s.live.end() || it->second.device || it->second.base)
        return api_error(cudaErrorHostMemoryNotRegistered, "cudaHostUnregister",
                         ptr_str(ptr) + " is not the start of memory registered with cudaHostRegister");
    s.live.erase(it);
    return ok();
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (!pDevice || flags != 0)
        return api_error(cudaErrorInvalidValue, "cudaHostGetDevicePointer", "pDevice is NULL or flags is not 0");
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    const Allocation* a = find_alloc(s, pHost, 1);
    if (!a || a->device)
        return api_error(cudaErrorInvalidValue, "cudaHostGetDevicePointer",
                         ptr_str(pHost) + " is not pinned host memory (cudaHostAlloc, cudaMallocHost or "
                                          "cudaHostRegister)");
    *pDevice = pHost;  // one address space: the host address is the device address
    return ok();
}

cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    const Allocation* a = find_alloc(s, pHost, 1);
    if (!pFlags || !a || a->device)
        return api_error(cudaErrorInvalidValue, "cudaHostGetFlags", "pFlags is NULL or the memory is not pinned");
    *pFlags = cudaHostAllocMapped;  // every pinned allocation is mapped (unified addressing)
    return ok();
}

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (flags & ~0xffu) return api_error(cudaErrorInvalidValue, "cudaSetDeviceFlags", "unknown flags");
    state().device_flags = flags;
    return ok();
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
    if (!flags) return api_error(cudaErrorInvalidValue, "cudaGetDeviceFlags", "flags is NULL");
    *flags = state().device_flags | cudaDeviceMapHost;  // as a GPU reports it with unified addressing
    return ok();
}

cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
    CUSIM_ALLOCATION("cudaMallocAsync", ptr);
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaMallocAsync", "the stream is not a valid stream handle");
    // On a captured stream the allocation is a node of the graph: its address is fixed now, its
    // memory exists from each launch of the graph on (graph.cpp).
    if (ptr && capture_allocation(stream, ptr, size)) return cudaSuccess;
    if (cudaError_t e = allocate(ptr, size, true, "cudaMallocAsync")) return e;
    note_pool_allocation(size);
    return cudaSuccess;
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
    CUSIM_API_PROLOGUE();
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaFreeAsync", "the stream is not a valid stream handle");
    if (ptr && capture_operation(stream, cudaGraphNodeTypeMemFree, "cudaFreeAsync",
                                 [ptr](cudaStream_t) { release(ptr, true, "cudaFreeAsync"); }))
        return cudaSuccess;
    size_t size = 0;
    {
        State& s = state();
        std::lock_guard<std::mutex> lk(s.mu);
        if (auto it = s.live.find(reinterpret_cast<uintptr_t>(ptr)); it != s.live.end()) size = it->second.size;
    }
    if (cudaError_t e = release(ptr, true, "cudaFreeAsync")) return e;
    note_pool_release(size);
    return cudaSuccess;
}

namespace cusim::detail {
bool device_allocation_live(const void* p) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(p));
    return it != s.live.end() && it->second.device;
}

// Device memory at an address that an earlier allocation of the same size had and released (a
// graph's allocation, whose address stays the same at every launch): its pages are mapped again.
cudaError_t device_allocate_at(void* p, size_t size, const char* api) {
    State& s = state();
    const size_t pg = page_size();
    const size_t bytes = ((std::max<size_t>(size, 1) + 255) / 256) * 256;
    const size_t map_bytes = ((kFrontRedzone + bytes + pg - 1) / pg) * pg + pg;
    char* guard = static_cast<char*>(p) + bytes;
    char* base = guard + pg - map_bytes;
    std::lock_guard<std::mutex> lk(s.mu);
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    if (s.live.count(key)) return cudaSuccess;  // never released
    if (!s.freed.count(key) || s.freed.at(key).first != size)
        return report_error(cudaErrorInvalidValue, std::string(api) + ": " + ptr_str(p) +
                                                       " is not a released allocation of " + std::to_string(size) + " bytes");
    if (size > kTotalGlobalMem - s.device_bytes)
        return report_error(cudaErrorMemoryAllocation, std::string(api) + ": out of the virtual device's 80 GiB");
    if (mmap(base, map_bytes - pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) == MAP_FAILED)
        return report_error(cudaErrorMemoryAllocation, std::string(api) + ": could not map " + std::to_string(size) + " bytes");
    if (size <= kFillLimit) std::memset(p, 0xFF, size);
    s.live[key] = Allocation{size, true, api_site(), base, map_bytes};
    s.freed.erase(key);
    s.device_bytes += size;
    if (analysis_hooks::instrumented) analysis_hooks::on_alloc(p, size);
    return cudaSuccess;
}
}  // namespace cusim::detail

namespace cusim::detail {
void register_mapped_range(void* p, size_t size, bool read_only) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    Allocation a{size, true, "", nullptr, 0};
    a.mapped = true;
    a.read_only = read_only;
    s.live[reinterpret_cast<uintptr_t>(p)] = a;
}

void unregister_mapped_range(void* p) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(p));
    if (it != s.live.end() && it->second.mapped) s.live.erase(it);
}

void label_address_range(void* p, size_t size, const char* what) {
    State& s = state();
    {
        std::lock_guard<std::mutex> lk(s.mu);
        if (what) s.labeled[reinterpret_cast<uintptr_t>(p)] = {size, what};
        else s.labeled.erase(reinterpret_cast<uintptr_t>(p));
    }
    if (analysis_hooks::instrumented) analysis_hooks::on_label_range(p, size, what);
}

bool charge_device_memory(size_t bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (bytes > kTotalGlobalMem - s.device_bytes) return false;
    s.device_bytes += bytes;
    return true;
}

void credit_device_memory(size_t bytes) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.device_bytes -= bytes;
}
}  // namespace cusim::detail

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (free_bytes) *free_bytes = kTotalGlobalMem - s.device_bytes;
    if (total) *total = kTotalGlobalMem;
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    CUSIM_INJECTION_POINT("cudaMemcpy");
    if (cudaError_t e = check_copy(dst, src, count, kind, "cudaMemcpy")) return e;
    if (count) std::memmove(dst, src, count);
    if (count && analysis_hooks::instrumented) analysis_hooks::on_host_write(dst, count);
    tls_site_file = nullptr;
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
    CUSIM_INJECTION_POINT("cudaMemcpyAsync");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaMemcpyAsync", "the stream is not a valid stream handle");
    // Captured: checked when the graph runs it (the memory may be a graph allocation, which
    // exists only from the graph's launch on).
    if (capture_operation(stream, cudaGraphNodeTypeMemcpy, "cudaMemcpyAsync",
                          [=](cudaStream_t) { cudaMemcpy(dst, src, count, kind); }))
        return cudaSuccess;
    if (cudaError_t e = check_copy(dst, src, count, kind, "cudaMemcpyAsync")) return e;
    note_stream_work(stream, "cudaMemcpyAsync", api_site());
    if (count) std::memmove(dst, src, count);
    if (count && analysis_hooks::instrumented) analysis_hooks::on_host_write(dst, count);
    tls_site_file = nullptr;
    return cudaSuccess;
}

namespace {
cudaError_t memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                      cudaMemcpyKind kind, const char* api) {
    if (width > dpitch || width > spitch)
        return api_error(cudaErrorInvalidPitchValue, api, "width is larger than a pitch");
    if (height == 0 || width == 0) return ok();
    const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    if (cudaError_t e = check_copy(dst, src, std::min(dspan, sspan), kind, api)) return e;
    for (size_t r = 0; r < height; ++r) {
        std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
        if (analysis_hooks::instrumented) analysis_hooks::on_host_write(static_cast<char*>(dst) + r * dpitch, width);
    }
    tls_site_file = nullptr;
    return cudaSuccess;
}
}  // namespace

namespace cusim::detail {
// For the CUDA arrays, textures and surfaces of texture.cpp: device memory, 2D copies and the
// runtime's errors under the name of the API the program called.
cudaError_t device_allocate(void** ptr, size_t size, const char* api) { return allocate(ptr, size, true, api); }
cudaError_t device_release(void* ptr, const char* api) { return release(ptr, true, api); }
cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind, const char* api) {
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, api);
}
cudaError_t runtime_error(cudaError_t err, const char* api, const std::string& detail) {
    return api_error(err, api, detail);
}
cudaError_t runtime_prologue() {
    CUSIM_API_PROLOGUE();
    return cudaSuccess;
}
cudaError_t runtime_injection_point(const char* api) {
    CUSIM_INJECTION_POINT(api);
    return cudaSuccess;
}
}  // namespace cusim::detail

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
    CUSIM_INJECTION_POINT("cudaMemcpy2D");
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, "cudaMemcpy2D");
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
    CUSIM_INJECTION_POINT("cudaMemcpy2DAsync");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaMemcpy2DAsync", "the stream is not a valid stream handle");
    if (capture_operation(stream, cudaGraphNodeTypeMemcpy, "cudaMemcpy2DAsync", [=](cudaStream_t) {
            memcpy_2d(dst, dpitch, src, spitch, width, height, kind, "cudaMemcpy2DAsync");
        }))
        return cudaSuccess;
    note_stream_work(stream, "cudaMemcpy2DAsync", api_site());
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, "cudaMemcpy2DAsync");
}

// Rows are padded to a multiple of 512 bytes (the textureAlignment of the virtual device), as a
// GPU pads them to its own alignment: code must use the returned pitch, never width * sizeof(T).
cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
    CUSIM_ALLOCATION("cudaMallocPitch", ptr);
    if (!pitch) return api_error(cudaErrorInvalidValue, "cudaMallocPitch", "pitch is NULL");
    const size_t p = ((std::max<size_t>(width, 1) + 511) / 512) * 512;
    if (cudaError_t e = allocate(ptr, p * height, true, "cudaMallocPitch")) return e;
    *pitch = p;
    return cudaSuccess;
}

namespace {
cudaError_t memset_impl(void* ptr, int value, size_t count, const char* api) {
    State& s = state();
    {
        std::lock_guard<std::mutex> lk(s.mu);
        if (count && classify(s, ptr, count, true) != Space::Device)
            return report_error(cudaErrorInvalidValue, std::string(api) + at_site() + ": " +
                                                           explain_pointer(s, ptr, count));
    }
    if (count) std::memset(ptr, value, count);
    if (count && analysis_hooks::instrumented) analysis_hooks::on_host_write(ptr, count);
    tls_site_file = nullptr;
    return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
    CUSIM_INJECTION_POINT("cudaMemset");
    return memset_impl(ptr, value, count, "cudaMemset");
}

cudaError_t cudaMemset2D(void* ptr, size_t pitch, int value, size_t width, size_t height) {
    CUSIM_API_PROLOGUE();
    if (width > pitch) return api_error(cudaErrorInvalidPitchValue, "cudaMemset2D", "width is larger than the pitch");
    if (width == 0 || height == 0) return ok();
    {
        State& s = state();
        std::lock_guard<std::mutex> lk(s.mu);
        const size_t span = pitch * (height - 1) + width;
        if (classify(s, ptr, span, true) != Space::Device)
            return report_error(cudaErrorInvalidValue, std::string("cudaMemset2D") + at_site() + ": " +
                                                           explain_pointer(s, ptr, span));
    }
    for (size_t r = 0; r < height; ++r) {
        char* row = static_cast<char*>(ptr) + r * pitch;
        std::memset(row, value, width);
        if (analysis_hooks::instrumented) analysis_hooks::on_host_write(row, width);
    }
    tls_site_file = nullptr;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
    CUSIM_INJECTION_POINT("cudaMemsetAsync");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaMemsetAsync", "the stream is not a valid stream handle");
    if (capture_operation(stream, cudaGraphNodeTypeMemset, "cudaMemsetAsync",
                          [=](cudaStream_t) { memset_impl(ptr, value, count, "cudaMemsetAsync"); }))
        return cudaSuccess;
    note_stream_work(stream, "cudaMemsetAsync", api_site());
    return memset_impl(ptr, value, count, "cudaMemsetAsync");
}

// ---- Streams and events: work is synchronous, so every stream is always complete --------------

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
    return cudaStreamCreateWithPriority(stream, flags, 0);
}

// Priorities are recorded, not used: every stream is always complete (docs/cusim.md). The range is
// sm_90's: 0 (least) to -5 (greatest); a priority outside it is clamped, as CUDA does.
constexpr int kLeastStreamPriority = 0, kGreatestStreamPriority = -5;

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
    if (leastPriority) *leastPriority = kLeastStreamPriority;
    if (greatestPriority) *greatestPriority = kGreatestStreamPriority;
    return ok();
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
    CUSIM_API_PROLOGUE();
    if (!stream) return api_error(cudaErrorInvalidValue, "cudaStreamCreate", "stream is NULL");
    auto* st = new Stream{flags, std::clamp(priority, kGreatestStreamPriority, kLeastStreamPriority)};
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.streams.insert(st);
    *stream = st;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::unique_lock<std::mutex> lk(s.mu);
    if (!s.streams.erase(stream)) {
        lk.unlock();
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", "not a live stream");
    }
    // A destroyed stream's work still runs to its end on a GPU, nothing waiting for it.
    if (auto it = s.pending.find(stream); it != s.pending.end()) {
        s.pending_destroyed.push_back(it->second);
        s.pending.erase(it);
    }
    for (Event* e : s.events) {
        if (e->stream == stream) e->stream = nullptr;
    }
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    CUSIM_API_PROLOGUE();
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize", "not a live stream");
    if (cudaError_t e = capture_forbids_sync(stream, "cudaStreamSynchronize")) return e;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.pending.erase(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
    CUSIM_API_PROLOGUE();
    if (!priority) return api_error(cudaErrorInvalidValue, "cudaStreamGetPriority", "priority is NULL");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamGetPriority", "not a live stream");
    const bool default_stream = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    *priority = default_stream ? 0 : stream->priority;
    return cudaSuccess;
}

namespace {

bool default_stream(cudaStream_t stream) {
    return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

/// Why CUDA refuses @p v as the value of stream attribute @p attr, or "" when it takes it.
std::string stream_attribute_problem(cudaLaunchAttributeID attr, const cudaLaunchAttributeValue& v) {
    switch (attr) {
        case cudaLaunchAttributeAccessPolicyWindow: {
            const cudaAccessPolicyWindow& w = v.accessPolicyWindow;
            if (!(w.hitRatio >= 0.f && w.hitRatio <= 1.f))
                return "accessPolicyWindow.hitRatio is " + std::to_string(w.hitRatio) + " (it is a fraction, 0 to 1)";
            if (w.num_bytes > size_t(kAccessPolicyMaxWindowSize))
                return "accessPolicyWindow.num_bytes is " + std::to_string(w.num_bytes) +
                       ", more than the device's accessPolicyMaxWindowSize (" +
                       std::to_string(kAccessPolicyMaxWindowSize) + ")";
            if (w.hitProp < cudaAccessPropertyNormal || w.hitProp > cudaAccessPropertyPersisting)
                return "accessPolicyWindow.hitProp is not a cudaAccessProperty";
            if (w.missProp != cudaAccessPropertyNormal && w.missProp != cudaAccessPropertyStreaming)
                return "accessPolicyWindow.missProp must be cudaAccessPropertyNormal or cudaAccessPropertyStreaming";
            return "";
        }
        case cudaLaunchAttributeSynchronizationPolicy:
            return v.syncPolicy >= cudaSyncPolicyAuto && v.syncPolicy <= cudaSyncPolicyBlockingSync
                       ? ""
                       : "syncPolicy is not a cudaSynchronizationPolicy";
        case cudaLaunchAttributeMemSyncDomain:
            return v.memSyncDomain == cudaLaunchMemSyncDomainDefault || v.memSyncDomain == cudaLaunchMemSyncDomainRemote
                       ? ""
                       : "memSyncDomain is not a cudaLaunchMemSyncDomain";
        case cudaLaunchAttributeNvlinkUtilCentricScheduling:
            return v.nvlinkUtilCentricScheduling <= 1 ? "" : "nvlinkUtilCentricScheduling must be 0 or 1";
        case cudaLaunchAttributePriority:
        case cudaLaunchAttributeMemSyncDomainMap: return "";
        default:
            return "attribute " + std::to_string(int(attr)) +
                   " is not a stream attribute (it belongs to kernel launches or graph nodes)";
    }
}

/// The attributes of @p stream (live or a default stream); the caller holds the state's lock.
std::map<int, cudaLaunchAttributeValue>& attributes_of(State& s, cudaStream_t stream) {
    return default_stream(stream) ? s.default_stream_attributes : stream->attributes;
}

}  // namespace

cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaLaunchAttributeID attr, const cudaLaunchAttributeValue* value) {
    const char* api = "cudaStreamSetAttribute";
    CUSIM_API_PROLOGUE();
    if (!value) return api_error(cudaErrorInvalidValue, api, "value is NULL");
    if (!valid_stream(stream)) return api_error(cudaErrorInvalidResourceHandle, api, "not a live stream");
    if (std::string why = stream_attribute_problem(attr, *value); !why.empty())
        return api_error(cudaErrorInvalidValue, api, why);
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    cudaLaunchAttributeValue& kept = attributes_of(s, stream)[attr];
    kept = *value;
    if (attr == cudaLaunchAttributePriority) {
        kept.priority = std::clamp(value->priority, kGreatestStreamPriority, kLeastStreamPriority);
        if (!default_stream(stream)) stream->priority = kept.priority;
    }
    return cudaSuccess;
}

cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaLaunchAttributeID attr, cudaLaunchAttributeValue* value_out) {
    const char* api = "cudaStreamGetAttribute";
    CUSIM_API_PROLOGUE();
    if (!value_out) return api_error(cudaErrorInvalidValue, api, "value_out is NULL");
    if (!valid_stream(stream)) return api_error(cudaErrorInvalidResourceHandle, api, "not a live stream");
    cudaLaunchAttributeValue probe{};
    probe.syncPolicy = cudaSyncPolicyAuto;  // a value every stream attribute takes
    if (std::string why = stream_attribute_problem(attr, probe); !why.empty())
        return api_error(cudaErrorInvalidValue, api, why);
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    const auto& kept = attributes_of(s, stream);
    // What a stream has before anything was set: no window, the automatic policy, its priority.
    cudaLaunchAttributeValue v{};
    if (auto it = kept.find(attr); it != kept.end()) v = it->second;
    else if (attr == cudaLaunchAttributeSynchronizationPolicy) v.syncPolicy = cudaSyncPolicyAuto;
    if (attr == cudaLaunchAttributePriority && !default_stream(stream)) v.priority = stream->priority;
    *value_out = v;
    return cudaSuccess;
}

cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
    const char* api = "cudaStreamCopyAttributes";
    CUSIM_API_PROLOGUE();
    if (!valid_stream(dst) || !valid_stream(src))
        return api_error(cudaErrorInvalidResourceHandle, api, "dst or src is not a live stream");
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    attributes_of(s, dst) = attributes_of(s, src);
    if (!default_stream(dst)) dst->priority = default_stream(src) ? 0 : src->priority;
    return cudaSuccess;
}

cudaError_t cudaCtxResetPersistingL2Cache() {
    CUSIM_API_PROLOGUE();
    return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
    CUSIM_API_PROLOGUE();
    if (!flags) return api_error(cudaErrorInvalidValue, "cudaStreamGetFlags", "flags is NULL");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamGetFlags", "not a live stream");
    const bool default_stream = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    *flags = default_stream ? cudaStreamDefault : stream->flags;
    return cudaSuccess;
}

// Host functions run when the work before them in the stream is complete: with synchronous
// streams, that is now, on the calling thread (a GPU runs them on a driver thread, in stream order).
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
    CUSIM_API_PROLOGUE();
    if (!fn) return api_error(cudaErrorInvalidValue, "cudaLaunchHostFunc", "fn is NULL");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaLaunchHostFunc", "not a live stream");
    if (capture_operation(stream, cudaGraphNodeTypeHost, "cudaLaunchHostFunc",
                          [fn, userData](cudaStream_t) { fn(userData); }))
        return cudaSuccess;
    note_stream_work(stream, "cudaLaunchHostFunc", api_site());
    fn(userData);
    return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* userData,
                                  unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (!callback) return api_error(cudaErrorInvalidValue, "cudaStreamAddCallback", "callback is NULL");
    if (flags != 0) return api_error(cudaErrorInvalidValue, "cudaStreamAddCallback", "flags must be 0");
    if (!valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamAddCallback", "not a live stream");
    note_stream_work(stream, "cudaStreamAddCallback", api_site());
    callback(stream, cudaSuccess, userData);
    return cudaSuccess;
}

namespace {
bool valid_event(cudaEvent_t e) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    return s.events.count(e) != 0;
}

// The work an event covers (its stream's operations up to its record) has been waited for.
void waited_for(cudaEvent_t e) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (!e->stream) return;
    auto it = s.pending.find(e->stream);
    if (it != s.pending.end() && it->second.first <= e->covers) s.pending.erase(it);
}
}  // namespace

namespace cusim::detail {
void note_stream_work(cudaStream_t stream, const std::string& what, const std::string& site) {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    if (!s.streams.count(stream)) return;
    ++stream->operations;
    if (!(stream->flags & cudaStreamNonBlocking)) return;
    auto [it, first] = s.pending.try_emplace(stream);
    if (first) it->second = PendingWork{what, site, stream->operations, 0};
    ++it->second.operations;
}

void note_own_thread() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.own_threads.push_back(static_cast<long>(gettid()));
}
}  // namespace cusim::detail

namespace cusim::checker {
std::vector<UnsynchronizedWork> unsynchronized_work() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    std::vector<UnsynchronizedWork> out;
    for (const PendingWork& p : s.pending_destroyed) out.push_back({p.what, p.site, p.operations});
    for (const auto& [stream, p] : s.pending) out.push_back({p.what, p.site, p.operations});
    return out;
}

void clear_unsynchronized_work() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.pending.clear();
    s.pending_destroyed.clear();
}

std::vector<long> own_threads() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    return s.own_threads;
}
}  // namespace cusim::checker

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
    CUSIM_API_PROLOGUE();
    if (!valid_stream(stream) || !valid_event(event))
        return api_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent", "invalid stream or event");
    if (const int captured = capture_event_wait(stream, event)) {
        if (captured < 0)
            return api_error(cudaErrorStreamCaptureIsolation, "cudaStreamWaitEvent",
                             "the event was recorded in another capture than the stream's");
        return cudaSuccess;
    }
    // A stream that is not non-blocking is ordered with the default stream: what it waits for is
    // waited for by what follows on the default stream too.
    const bool ordered = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread ||
                         !(stream->flags & cudaStreamNonBlocking);
    if (ordered) waited_for(event);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (!event) return api_error(cudaErrorInvalidValue, "cudaEventCreate", "event is NULL");
    auto* ev = new Event{flags};
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.events.insert(ev);
    *event = ev;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    CUSIM_API_PROLOGUE();
    State& s = state();
    std::unique_lock<std::mutex> lk(s.mu);
    if (!s.events.erase(event)) {
        lk.unlock();
        return api_error(cudaErrorInvalidResourceHandle, "cudaEventDestroy", "not a live event");
    }
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    CUSIM_API_PROLOGUE();
    if (!valid_event(event) || !valid_stream(stream))
        return api_error(cudaErrorInvalidResourceHandle, "cudaEventRecord", "invalid event or stream");
    if (capture_event_record(event, stream)) return cudaSuccess;
    event->recorded = true;
    event->when = std::chrono::steady_clock::now();
    const bool user_stream = stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    event->stream = user_stream ? stream : nullptr;
    event->covers = user_stream ? stream->operations : 0;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    CUSIM_API_PROLOGUE();
    if (!valid_event(event)) return api_error(cudaErrorInvalidResourceHandle, "cudaEventSynchronize", "not a live event");
    waited_for(event);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return cudaEventSynchronize(event); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    CUSIM_API_PROLOGUE();
    if (!ms) return api_error(cudaErrorInvalidValue, "cudaEventElapsedTime", "ms is NULL");
    if (!valid_event(start) || !valid_event(end))
        return api_error(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "not a live event");
    if ((start->flags | end->flags) & cudaEventDisableTiming)
        return api_error(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime",
                         "an event was created with cudaEventDisableTiming");
    if (!start->recorded || !end->recorded)
        return api_error(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "an event has not been recorded");
    *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
    return cudaSuccess;
}

// ---- Launches through a void* kernel pointer ------------------------------------------------------

namespace cusim::detail {
void register_pointer_launch(const void* kernel, PointerLaunch launch, const char* name) {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.pointer_launches[kernel] = {launch, name};
}
}  // namespace cusim::detail

namespace {
cudaError_t launch_through_pointer(const char* api, const void* kernel, dim3 grid, dim3 block, void** args,
                                   size_t shmem, cudaStream_t stream, const cusim::site& where,
                                   bool cooperative = false) {
    CUSIM_API_PROLOGUE();
    std::pair<PointerLaunch, const char*> entry{nullptr, nullptr};
    {
        State& s = state();
        std::lock_guard<std::mutex> lk(s.mu);
        auto it = s.pointer_launches.find(kernel);
        if (it != s.pointer_launches.end()) entry = it->second;
    }
    if (!entry.first) {
        const std::string at = std::string(where.file_name()) + ":" + std::to_string(where.line());
        return report_error(
            cudaErrorInvalidDeviceFunction,
            std::string(api) + " at " + at + ": " + (kernel ? ptr_str(kernel) : std::string("NULL")) +
                " is not a kernel cusim has seen cast to void*; cusim learns a kernel's parameter types where "
                "a .cu file it rewrites writes (void*)kernel: pass the kernel itself, or cast it there");
    }
    cusim::launch_config cfg(grid, block, shmem, stream);
    cfg.cooperative = cooperative;
    entry.first(kernel, entry.second, cfg, args, where);
    return cudaPeekAtLastError();
}
}  // namespace

cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem,
                             cudaStream_t stream, const cusim::site& where) {
    return launch_through_pointer("cudaLaunchKernel", kernel, grid, block, args, shmem, stream, where);
}
cudaError_t cudaLaunchCooperativeKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem,
                                        cudaStream_t stream, const cusim::site& where) {
    return launch_through_pointer("cudaLaunchCooperativeKernel", kernel, grid, block, args, shmem, stream, where,
                                  true);
}

// ---- Kernel attributes ---------------------------------------------------------------------------

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
    CUSIM_INJECTION_POINT("cudaFuncSetAttribute");
    if (!func) return api_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute", "func is NULL");
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || static_cast<size_t>(value) > kDynamicSharedOptinLimit)
            return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute",
                             "MaxDynamicSharedMemorySize " + std::to_string(value) +
                                 " is outside 0..232448 (227 KiB, the opt-in limit of sm_90)");
        State& s = state();
        std::lock_guard<std::mutex> lk(s.mu);
        s.max_dyn_smem[func] = value;
        return cudaSuccess;
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
        if (value < -1 || value > 100)
            return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute", "carveout must be -1 or 0..100");
        return cudaSuccess;
    }
    return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute", "attribute not supported by cusim");
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
    CUSIM_API_PROLOGUE();
    if (!attr || !func) return api_error(cudaErrorInvalidValue, "cudaFuncGetAttributes", "NULL argument");
    std::memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = max_threads_per_block(func);
    attr->maxDynamicSharedSizeBytes = static_cast<int>(max_dynamic_shared(func));
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->preferredShmemCarveout = -1;
    return cudaSuccess;
}

cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return ok(); }

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int flags) {
    if (flags & ~1u)
        return api_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "unknown flags");
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t, void*, size_t, unsigned int flags) {
    CUSIM_API_PROLOGUE();
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
        return api_error(cudaErrorInvalidValue, "cudaStreamAttachMemAsync", "flags is not one cudaMemAttach value");
    return ok();
}

namespace cusim::detail {
cudaError_t occupancy_error(const char* what) {
    return api_error(cudaErrorInvalidValue, "cudaOccupancyMaxPotentialBlockSize", what);
}
}  // namespace cusim::detail

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void*, int blockSize,
                                                          size_t dynamicSMemSize) {
    CUSIM_API_PROLOGUE();
    if (!numBlocks || blockSize <= 0 || blockSize > kMaxThreadsPerBlock)
        return api_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "invalid argument");
    *numBlocks = max_active_blocks_per_sm(blockSize, dynamicSMemSize);
    return cudaSuccess;
}

namespace cusim::detail {
int max_active_blocks_per_sm(int block_size, size_t dynamic_smem) {
    // sm_90 limits: 2048 threads, 32 blocks and 228 KiB shared memory per SM (registers not modelled).
    int by_threads = 2048 / (((block_size + 31) / 32) * 32);
    int by_smem = dynamic_smem ? static_cast<int>(233472 / (dynamic_smem + 1024)) : 32;
    return std::max(0, std::min({by_threads, by_smem, 32}));
}
}  // namespace cusim::detail

// ---- cusim::checker: device memory held, injected failures (cusim/checker.h) -------------------

namespace cusim::checker {

DeviceMemory device_memory() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    DeviceMemory m;
    for (const auto& [addr, a] : s.live) {
        if (!a.device) continue;
        ++m.allocations;
        m.bytes += a.size;
    }
    return m;
}

bool inject_failure(const std::string& api, unsigned nth, cudaError_t error) {
    static const std::set<std::string> kInjectable = {
        "cudaMalloc", "cudaMallocManaged", "cudaMallocPitch", "cudaMallocHost", "cudaHostAlloc",
        "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemset",
        "cudaMemsetAsync", "cudaDeviceSynchronize", "cudaFuncSetAttribute", kKernelLaunch};
    if (nth == 0 || error == cudaSuccess || !kInjectable.count(api)) return false;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.injections[api] = {nth, error};
    s.injecting.store(true, std::memory_order_release);
    return true;
}

InjectionOutcome end_injected_failures() {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    InjectionOutcome out;
    out.not_fired = static_cast<unsigned>(s.injections.size());
    out.work_after_failure = s.work_after_failure;
    out.first_work_after_failure = s.first_work_after_failure;
    s.injections.clear();
    s.injection_fired = false;
    s.work_after_failure = 0;
    s.first_work_after_failure.clear();
    s.injecting.store(false, std::memory_order_release);
    return out;
}

}  // namespace cusim::checker
