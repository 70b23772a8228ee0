// Internal interfaces shared by cusim's runtime and scheduler translation units.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#define CUSIM_NO_SITE_MACROS 1
#include "cuda_runtime.h"

namespace cusim::detail {

/// Records `err` as the calling host thread's last error (and as the sticky context error when
/// `sticky`), prints `detail` to stderr unless CUSIM_QUIET is set, and returns `err`.
cudaError_t report_error(cudaError_t err, const std::string& detail, bool sticky = false);
/// The sticky error that poisons the context after a device fault, or cudaSuccess.
cudaError_t sticky_error();
/// Clears the sticky error (cudaDeviceReset).
void clear_sticky_error();
/// Maximum dynamic shared memory a kernel may use (cudaFuncAttributeMaxDynamicSharedMemorySize).
size_t max_dynamic_shared(const void* kernel_id);
/// The largest block a kernel may be launched with: its __launch_bounds__, else 1024.
int max_threads_per_block(const void* kernel_id);
/// Blocks of `block_size` threads and `dynamic_smem` bytes one SM holds at once (what
/// cudaOccupancyMaxActiveBlocksPerMultiprocessor reports; a cooperative launch's limit per SM).
int max_active_blocks_per_sm(int block_size, size_t dynamic_smem);
/// True if `stream` is a live stream handle (or one of the default-stream handles).
bool valid_stream(cudaStream_t stream);
/// Fault injection at a kernel launch (cusim/checker.h), nothing unless a failure is being
/// injected: counts the launch (attempted, valid or not) as work done after an injected failure,
/// and returns the error injected into this launch (already reported as the last error; the
/// kernel must not run), else cudaSuccess.
cudaError_t injected_launch_failure(const char* kernel, const char* file, int line);
/// "file:line" of the runtime call being executed, or "" when unknown.
std::string api_site();
/// Notes an operation enqueued on @p stream: on a stream created with cudaStreamNonBlocking it
/// is unsynchronized work (cusim::checker::unsynchronized_work) until something waits for it.
void note_stream_work(cudaStream_t stream, const std::string& what, const std::string& site);
/// Records the calling thread as one of cusim's own (cusim::checker::own_threads).
void note_own_thread();
bool quiet();
/// Device memory as cudaMalloc gives it (and releases it), reported under the name @p api.
cudaError_t device_allocate(void** ptr, size_t size, const char* api);
cudaError_t device_release(void* ptr, const char* api);
/// cudaMemcpy2D's checks and copy, reported under the name @p api.
cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind, const char* api);
/// Stream capture (graph.cpp). When @p stream is being captured into a graph: records @p work
/// (run later, on the stream a launch of the graph gives it) as a node of type @p type and returns
/// true; else false, and the caller does the work now.
bool capture_operation(cudaStream_t stream, cudaGraphNodeType type, const char* what,
                       std::function<void(cudaStream_t)> work);
/// cudaEventRecord on a captured stream: the event keeps the stream's place in the capture (true).
bool capture_event_record(cudaEvent_t event, cudaStream_t stream);
/// cudaStreamWaitEvent within a capture: 1 handled (the stream joined the capture, or an edge
/// added), 0 no capture involved, -1 the stream and the event belong to different captures.
int capture_event_wait(cudaStream_t stream, cudaEvent_t event);
/// cudaErrorStreamCaptureUnsupported (the capture invalidated) when @p stream is being captured.
cudaError_t capture_forbids_sync(cudaStream_t stream, const char* api);
/// cudaMallocAsync on a captured stream: a memory allocation node whose address goes to *@p ptr (true).
bool capture_allocation(cudaStream_t stream, void** ptr, size_t size);
/// True while @p p is the start of live device memory.
bool device_allocation_live(const void* p);
/// Maps device memory again at @p p, which an allocation of @p size bytes had and released.
cudaError_t device_allocate_at(void* p, size_t size, const char* api);
/// The memory pool's statistics (cudaMemPoolGetAttribute): stream-ordered allocations made, released.
void note_pool_allocation(size_t bytes);
void note_pool_release(size_t bytes);
/// Streams being captured into graphs (graph.cpp); a launch checks it before looking a stream up.
bool stream_is_captured(cudaStream_t stream);
bool launching_from_device();
/// Runs the child grids that the grid just completed launched from its threads (dynamic
/// parallelism), each after the other, each with its own children when it completes.
void run_child_launches();
/// cudaDeviceReset for graph.cpp: every capture ends.
void reset_graphs();
/// cudaDeviceReset for texture.cpp: every CUDA array (its memory is already released), texture
/// and surface object is gone.
void reset_arrays_and_objects();
/// Reports @p err from the runtime call @p api ("api at file:line: detail") and returns it.
cudaError_t runtime_error(cudaError_t err, const char* api, const std::string& detail);
/// The sticky error of the context (a runtime call returns it first), else cudaSuccess.
cudaError_t runtime_prologue();
/// The sticky error, else the failure injected into this call of @p api, else cudaSuccess.
cudaError_t runtime_injection_point(const char* api);

/// The virtual device's attribute @p attr into *@p value (cudaDeviceGetAttribute, and
/// cuDeviceGetAttribute for the attributes the two APIs share); false for a value that is no
/// runtime device attribute of CUDA 13.
bool device_attribute(cudaDeviceAttr attr, int* value);
/// Virtual memory (virtual_memory.cpp): [@p p, @p p + @p size), mapped by cuMemMap and opened by
/// cuMemSetAccess, is device memory to copies, memsets and cudaPointerGetAttributes until
/// unregister_mapped_range(@p p); with @p read_only no copy or memset may write it. cudaFree refuses it.
void register_mapped_range(void* p, size_t size, bool read_only);
void unregister_mapped_range(void* p);
/// Labels [@p p, @p p + @p size) as no device memory to use, and says why: @p what completes "the
/// address is in ..." in the messages of copies, memsets and memcheck; nullptr removes the label.
void label_address_range(void* p, size_t size, const char* what);
/// Charges @p bytes to the virtual device's memory (cudaMemGetInfo): false when they do not fit.
bool charge_device_memory(size_t bytes);
void credit_device_memory(size_t bytes);
/// cudaDeviceReset for virtual_memory.cpp: every mapping, physical allocation and reservation ends.
void reset_virtual_memory();
/// Fresh device memory up to this size holds all-ones bytes, as a GPU's holds whatever it held
/// before (cudaMalloc, cuMemCreate); above it the pages stay untouched (zero) until used.
constexpr size_t kDeviceFillLimit = size_t(1) << 30;

constexpr size_t kStaticSharedLimit = 48 * 1024;
constexpr size_t kDynamicSharedOptinLimit = 227 * 1024;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kNumSMs = 132;

}  // namespace cusim::detail

namespace cusim::detail {

/// Bytes of unused memory cusim keeps on each side of a block's shared-memory arena: an access
/// that lands there is a __shared__ index out of bounds (s[t - d] with t < d), which memcheck
/// reports as one, as compute-sanitizer does on a GPU, rather than as a stray host address.
constexpr size_t kSharedMargin = 64 * 1024;

/// What the analysis hooks need to know about the simulated thread running on this OS thread.
/// The scheduler keeps it current on every fiber switch.
struct ExecView {
    bool in_kernel = false;
    bool analyze = false;  // the running launch's kernel is instrumented
    unsigned tid = 0;  // linear thread index in the block
    uint3 thread{0, 0, 0};
    uint3 block{0, 0, 0};
    unsigned nthreads = 0;
    const char* stack_lo = nullptr;  // the running fiber's stack (guard excluded)
    const char* stack_hi = nullptr;
    char* smem = nullptr;  // block shared memory arena
    size_t smem_dyn = 0;
    const size_t* smem_static_used = nullptr;
    size_t smem_capacity = 0;
    const KernelLaunch* launch = nullptr;
    uintptr_t host_stack_lo = 0;  // the launching host thread's stack (kernel arguments, closures)
    uintptr_t host_stack_hi = 0;
};
extern thread_local ExecView tls_view;

/// Aborts the running block (from kernel code) with `code`; the report becomes the launch error.
[[noreturn]] void fail_current_block(cudaError_t code, const std::string& report);

/// Analysis hooks, called by the scheduler and the runtime. All are cheap no-ops when no kernel of
/// the binary is instrumented.
namespace analysis_hooks {
extern bool instrumented;  // set by __tsan_init from the instrumented translation units
void launch_begin(const KernelLaunch& launch);  // host thread, before the blocks run
void launch_end(const KernelLaunch& launch, cudaError_t fault, std::string& fault_report);  // resolves @PC:..@ in it
void block_begin();                       // worker thread
void barrier_complete();                  // all threads of the block met at __syncthreads
void warp_sync_complete(unsigned warp, unsigned mask, unsigned existing);
void block_end();                         // worker thread, block finished or failed
void grid_sync_complete();                // every block of the grid met at grid.sync()
// Runtime: device memory lifetime and host-side writes (initcheck).
void on_alloc(void* p, size_t size);
void on_free(void* p, size_t size);
void on_host_write(void* p, size_t size);  // cudaMemcpy/cudaMemset into device memory
// Virtual memory: a mapping that became inaccessible or was unmapped (no use-after-free record:
// its range stays reserved, and labelled), and the labels of label_address_range.
void on_unmap(void* p);
void on_label_range(void* p, size_t size, const char* what);
}  // namespace analysis_hooks

}  // namespace cusim::detail
