#include "comm/memory.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "comm/error.h"
#ifdef COMM_WITH_CUDA
#include "device_api.h"
#endif

namespace comm {

const char* name_of(MemorySpace s) { return s == MemorySpace::device ? "device" : "host"; }

bool built_with_cuda() {
#ifdef COMM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

MemorySpace default_memory_space() {
  if (const char* env = std::getenv("WB_COMM_MEMORY")) {
    std::string v(env);
    if (v == "host") return MemorySpace::host;
    if (v == "device") {
      COMM_REQUIRE(built_with_cuda(),
                   "WB_COMM_MEMORY=device, but this build has no CUDA (configure the cuda backend)");
      return MemorySpace::device;
    }
    COMM_THROW("WB_COMM_MEMORY='" + v + "' is not host or device");
  }
#ifdef COMM_WITH_CUDA
  if (detail::device_count() > 0) return MemorySpace::device;
#endif
  return MemorySpace::host;
}

namespace {
[[noreturn]] void no_cuda(const char* file, int line) {
  throw Error(file, line, "device memory requested, but this build has no CUDA (configure the cuda backend)");
}
}  // namespace

void* allocate(std::size_t bytes, MemorySpace space) {
  if (bytes == 0) return nullptr;
  if (space == MemorySpace::device) {
#ifdef COMM_WITH_CUDA
    return detail::device_alloc(bytes);
#else
    no_cuda(__FILE__, __LINE__);
#endif
  }
  // 64-byte alignment keeps the reduction loop on full vectors.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) COMM_THROW("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void deallocate(void* p, MemorySpace space) noexcept {
  if (!p) return;
#ifdef COMM_WITH_CUDA
  if (space == MemorySpace::device) return detail::device_free(p);
#else
  (void)space;
#endif
  std::free(p);
}

void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_space == MemorySpace::host && src_space == MemorySpace::host) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef COMM_WITH_CUDA
  detail::device_copy(dst, dst_space == MemorySpace::device, src, src_space == MemorySpace::device, bytes);
#else
  no_cuda(__FILE__, __LINE__);
#endif
}

void fill_bytes(void* dst, MemorySpace space, int value, std::size_t bytes) {
  if (bytes == 0) return;
  if (space == MemorySpace::host) {
    std::memset(dst, value, bytes);
    return;
  }
#ifdef COMM_WITH_CUDA
  detail::device_memset(dst, value, bytes);
#else
  no_cuda(__FILE__, __LINE__);
#endif
}

Buffer::Buffer(std::size_t bytes, MemorySpace space) : data_(allocate(bytes, space)), bytes_(bytes), space_(space) {}

void Buffer::reset() noexcept {
  deallocate(data_, space_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace comm
