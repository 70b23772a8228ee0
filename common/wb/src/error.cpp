#include "wb/error.h"

#include <sstream>

namespace wb {

std::string error_text(cudaError_t code) {
  const char* name = cudaGetErrorName(code);
  const char* text = cudaGetErrorString(code);
  std::ostringstream out;
  out << (name ? name : "cudaError") << " (" << (text ? text : "unknown error") << ")";
  return out.str();
}

void check_cuda(cudaError_t code, const char* expression, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream out;
  out << file << ":" << line << ": " << expression << " failed: " << error_text(code);
  throw CudaError(code, out.str());
}

}  // namespace wb
