// Internal interfaces shared by cusim's runtime and scheduler translation units.
#pragma once
#include <cstdint>
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
/// True if `stream` is a live stream handle (or one of the default-stream handles).
bool valid_stream(cudaStream_t stream);
/// "file:line" of the runtime call being executed, or "" when unknown.
std::string api_site();
bool quiet();

constexpr size_t kStaticSharedLimit = 48 * 1024;
constexpr size_t kDynamicSharedOptinLimit = 227 * 1024;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kNumSMs = 132;

}  // namespace cusim::detail
