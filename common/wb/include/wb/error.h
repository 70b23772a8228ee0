/// @file
/// @brief CUDA error checking that names the call, the file:line and CUDA's own message.
///
/// Library code throws wb::CudaError; only main() (or a test framework) decides to exit.
/// @code
///   WB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
///   WB_CUDA_CHECK(cudaGetLastError());   // after a kernel launch
/// @endcode
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace wb {

/// A failed CUDA runtime call: what was called, where, and CUDA's error name and string.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The CUDA error code the call returned.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// "cudaErrorInvalidConfiguration (invalid configuration argument)".
std::string error_text(cudaError_t code);

/// Throws CudaError when @p code is not cudaSuccess. Prefer the WB_CUDA_CHECK macro,
/// which fills in the expression and the call site.
void check_cuda(cudaError_t code, const char* expression, const char* file, int line);

}  // namespace wb

/// Evaluates a CUDA runtime call once; throws wb::CudaError with file:line on failure.
#define WB_CUDA_CHECK(expr) ::wb::check_cuda((expr), #expr, __FILE__, __LINE__)
