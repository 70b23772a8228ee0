// cusim analysis: compute-sanitizer-like checks (memcheck, racecheck, initcheck, synccheck) and
// memory-efficiency metrics, collected while kernels built with analysis instrumentation run.
//
// Kernel translation units are compiled with GCC's ThreadSanitizer instrumentation
// (-fsanitize=thread --param tsan-instrument-func-entry-exit=0, compile only); cusim defines the
// __tsan_* entry points itself, so every load and store of kernel code reaches cusim, which
// classifies it (own stack, block shared memory, cudaMalloc'd global memory, out of bounds) and
// groups the accesses of a warp into warp-level requests by (warp, call site, per-lane occurrence).
//
// Tools are selected with the environment variable CUSIM_TOOL (comma-separated list of memcheck,
// racecheck, initcheck, synccheck, or `all` / `none`; default: all). racecheck also reports values
// handed to another block through a flag with no __threadfence() between them (flag protocols, in
// global memory). Metrics are always collected.
// Metrics group at most kSampledOccurrences occurrences of each access site per lane between two
// synchronization points; totals (requests, bytes) are exact, sectors and wavefronts beyond the
// sample are scaled from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cusim::analysis {

constexpr unsigned kSampledOccurrences = 64;

struct KernelMetrics {
    std::string kernel;  ///< kernel name as written at the launch
    uint64_t launches = 0;
    uint64_t global_load_requests = 0, global_store_requests = 0;  ///< warp-level instructions
    uint64_t global_load_sectors = 0, global_store_sectors = 0;    ///< 32-byte sectors they touch
    uint64_t shared_load_requests = 0, shared_store_requests = 0;
    uint64_t shared_load_wavefronts = 0, shared_store_wavefronts = 0;  ///< bank-conflict replays included
    uint64_t global_bytes_read = 0, global_bytes_written = 0;
    uint64_t shared_bytes_read = 0, shared_bytes_written = 0;  ///< requested by the lanes
    uint64_t atomics = 0;  ///< atomic operations, global and shared (each CUDA atomic counts once)
    uint64_t global_atomics = 0, shared_atomics = 0;  ///< the same by memory space

    /// (load + store sectors) / (load + store requests); 0 when the kernel made no global access.
    double global_sectors_per_request() const {
        const uint64_t r = global_load_requests + global_store_requests;
        return r ? double(global_load_sectors + global_store_sectors) / double(r) : 0.0;
    }
    double global_load_sectors_per_request() const {
        return global_load_requests ? double(global_load_sectors) / double(global_load_requests) : 0.0;
    }
    double global_store_sectors_per_request() const {
        return global_store_requests ? double(global_store_sectors) / double(global_store_requests) : 0.0;
    }
    /// (load + store wavefronts) / (load + store requests); 1 means no bank conflicts.
    double shared_wavefronts_per_request() const {
        const uint64_t r = shared_load_requests + shared_store_requests;
        return r ? double(shared_load_wavefronts + shared_store_wavefronts) / double(r) : 0.0;
    }
    double shared_load_wavefronts_per_request() const {
        return shared_load_requests ? double(shared_load_wavefronts) / double(shared_load_requests) : 0.0;
    }
    /// Shared-load wavefronts per 128 bytes the lanes requested: 1 without bank conflicts for
    /// accesses of any width by a full warp (a 16-byte access per lane takes 4 wavefronts for 512 bytes).
    double shared_load_wavefronts_per_128_bytes() const {
        return shared_bytes_read ? 128.0 * double(shared_load_wavefronts) / double(shared_bytes_read) : 0.0;
    }
    double shared_store_wavefronts_per_128_bytes() const {
        return shared_bytes_written ? 128.0 * double(shared_store_wavefronts) / double(shared_bytes_written) : 0.0;
    }
    double shared_store_wavefronts_per_request() const {
        return shared_store_requests ? double(shared_store_wavefronts) / double(shared_store_requests) : 0.0;
    }
};

/// Metrics of one source line (a file:line with any number of access sites).
struct LineMetrics : KernelMetrics {
    std::string file;
    int line = 0;
};

struct Report {
    std::string tool;     ///< memcheck, racecheck, initcheck, synccheck
    std::string kind;     ///< e.g. "Invalid __global__ write of size 4 bytes"
    std::string file;     ///< .cu file of the access, "" if unknown
    int line = 0;
    std::string message;  ///< the full report, as printed
    uint64_t count = 0;   ///< occurrences folded into this report (same site and kind)
};

/// True when this binary contains kernels built with analysis instrumentation.
bool available();
/// Clears collected metrics and reports.
void reset();
/// One entry per kernel name launched since reset().
std::vector<KernelMetrics> metrics();
/// Metrics per source line for one kernel (empty kernel name: all kernels).
std::vector<LineMetrics> line_metrics(const std::string& kernel = "");
/// Findings of the enabled tools since reset().
std::vector<Report> reports();
/// Replaces the CUSIM_TOOL selection for the following launches (same syntax, e.g. "racecheck").
void set_tools(const std::string& list);
/// True if `tool` (memcheck, racecheck, initcheck, synccheck) is enabled.
bool tool_enabled(const std::string& tool);
/// Writes the per-kernel and per-line profile (Nsight Compute memory-workload style).
std::string profile_text();

}  // namespace cusim::analysis
