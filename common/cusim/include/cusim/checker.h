// What a checker can ask of cusim beyond the CUDA API, to test a program's host code: the device
// memory it holds (a leak shows as allocations left after a function returned), the launch
// configurations its kernels ran with, and failures injected into runtime calls (error paths that a
// healthy device never takes). In a workbook check binary split into judge and worker, the judge
// forwards these calls to the worker's cusim (checker/support/remote); there, as with analysis
// metrics, the answers come from the process that runs the code under test.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cusim/runtime_api.h"

namespace cusim::checker {

/// Device memory the program holds: its live cudaMalloc, cudaMallocPitch and cudaMallocManaged
/// allocations (pinned host memory is not counted).
struct DeviceMemory {
    uint64_t allocations = 0;
    uint64_t bytes = 0;  ///< as requested
    bool operator==(const DeviceMemory&) const = default;
};
DeviceMemory device_memory();

/// One launch configuration of one kernel, and how many launches used it since clear_launches().
/// Only launches that ran are recorded (not those the launch rejected, e.g. a block of 0 threads).
struct LaunchRecord {
    std::string kernel;  ///< the kernel's name as written at the launch
    std::string file;    ///< the launch's .cu file and line
    int line = 0;
    uint32_t grid[3] = {1, 1, 1};
    uint32_t block[3] = {1, 1, 1};
    uint64_t dynamic_shared = 0;  ///< bytes
    uint64_t launches = 0;
    uint64_t threads_per_block() const { return uint64_t(block[0]) * block[1] * block[2]; }
    uint64_t blocks() const { return uint64_t(grid[0]) * grid[1] * grid[2]; }
    uint64_t threads_per_launch() const { return blocks() * threads_per_block(); }
    /// "grid X x Y x Z, block X x Y x Z"
    std::string shape() const {
        return "grid " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " x " + std::to_string(grid[2]) +
               ", block " + std::to_string(block[0]) + " x " + std::to_string(block[1]) + " x " +
               std::to_string(block[2]);
    }
};
/// The threads of every launch in @p log (each configuration times its number of launches).
inline uint64_t threads_launched(const std::vector<LaunchRecord>& log) {
    uint64_t threads = 0;
    for (const LaunchRecord& l : log) threads += l.threads_per_launch() * l.launches;
    return threads;
}
/// The launch configurations since the last clear_launches(), in order of first use. At most
/// kMaxLaunchRecords distinct ones are kept; later new configurations are dropped.
std::vector<LaunchRecord> launches();
void clear_launches();
constexpr std::size_t kMaxLaunchRecords = 4096;

/// The order in which the blocks of the following launches are started (until changed; not
/// cooperative launches, whose blocks are all resident at once): `launch` (linear index: x
/// fastest, then y, then z; the default), `reverse`, or `even_then_odd` (every even linear index,
/// then every odd one). With more than one worker (CUSIM_THREADS) blocks still run side by side;
/// the order is the one they are taken in. A check of determinism runs a kernel once in each
/// order: code whose result depends on the order blocks finish in (float atomicAdd of partial
/// results) then differs between the runs every time, not only when the workers happen to race.
enum class BlockOrder : unsigned { launch = 0, reverse = 1, even_then_odd = 2 };
void set_block_order(BlockOrder order);

/// Fault injection: the @p nth call (1: the next one) of the runtime function @p api from now on
/// does nothing and returns @p error, as if the device had failed it; an allocation function also
/// sets its pointer to NULL. The error is reported like any other (cudaGetLastError() returns it,
/// one line on stderr) but is never sticky. Each api has at most one pending injection (a new one
/// replaces it); it fires once. Functions that take injections: cudaMalloc, cudaMallocManaged,
/// cudaMallocPitch, cudaMallocHost, cudaHostAlloc, cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D,
/// cudaMemcpy2DAsync, cudaMemset, cudaMemsetAsync, cudaDeviceSynchronize, cudaFuncSetAttribute,
/// and kernel launches (@p api kKernelLaunch: `<<<...>>>`, cudaLaunchKernel and cooperative
/// launches alike; the kernel does not run and the error is what the next cudaGetLastError()
/// returns, as for a launch that asks for too many resources). Returns false (and injects
/// nothing) for another name, nth == 0 or error == cudaSuccess.
/// Every call counts, whoever makes it: inject right before the code under test runs, and call
/// end_injected_failures() right after it.
bool inject_failure(const std::string& api, unsigned nth, cudaError_t error);
/// The name inject_failure() takes for kernel launches.
inline constexpr const char* kKernelLaunch = "kernel launch";

/// What the program did with the injected failures.
struct InjectionOutcome {
    unsigned not_fired = 0;  ///< injections that never fired: the code made fewer calls
    /// Work done after the first injected failure: calls of the functions above (but
    /// cudaDeviceSynchronize) and kernel launches. Code that returns the error at once does none.
    uint64_t work_after_failure = 0;
    std::string first_work_after_failure;  ///< e.g. "the launch of saxpy_kernel at saxpy.cu:23"
};
/// Ends fault injection: cancels the injections that have not fired and says what happened.
InjectionOutcome end_injected_failures();

/// Work enqueued on a stream created with cudaStreamNonBlocking that nothing has waited for
/// since: no cudaStreamSynchronize or cudaStreamQuery of that stream, no cudaDeviceSynchronize, no
/// event recorded after it and then synchronized, queried, or waited for by a stream that is not
/// non-blocking. cusim runs all work at once; on a GPU such a stream runs on after the call that
/// enqueued it has returned, unordered with the default stream: outside a timing recorded there,
/// and ahead of nothing that reads its results. Counted: kernel launches, cudaMemcpyAsync,
/// cudaMemcpy2DAsync, cudaMemsetAsync, cudaLaunchHostFunc and cudaStreamAddCallback.
struct UnsynchronizedWork {
    std::string what;  ///< the first such operation: "the launch of saxpy_kernel", "cudaMemcpyAsync"
    std::string site;  ///< its file:line, "" when unknown
    uint64_t operations = 0;  ///< operations enqueued on the stream since it was last waited for
};
/// One entry per stream (destroyed streams included) with work nothing has waited for.
std::vector<UnsynchronizedWork> unsynchronized_work();
/// Forgets what unsynchronized_work() reports (a new period of observation begins).
void clear_unsynchronized_work();

/// The Linux thread ids (gettid) of cusim's own threads, which run kernel blocks: a program's
/// threads are the others.
std::vector<long> own_threads();

}  // namespace cusim::checker
