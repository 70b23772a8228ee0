// Where collective buffers live. On host-only builds (the sim backend, whose "device" memory
// is host memory) everything is host memory. A build with CUDA (the cuda backend) also
// supports device memory: the communicator then stages transfers and runs reductions as
// kernels, so lab code never needs to know which space its pointers are in.
#pragma once

#include <cstddef>
#include <utility>

namespace comm {

enum class MemorySpace { host, device };

const char* name_of(MemorySpace s);

/// True when this library was built with CUDA support (the cuda backend).
bool built_with_cuda();

/// The space collective buffers use by default: `device` when built with CUDA and a GPU is
/// visible, else `host`. The environment variable WB_COMM_MEMORY=host|device overrides it
/// (asking for `device` without CUDA throws comm::Error).
MemorySpace default_memory_space();

void* allocate(std::size_t bytes, MemorySpace space);
void deallocate(void* p, MemorySpace space) noexcept;
/// Copies `bytes` between any two spaces (memmove semantics are not provided: no overlap).
void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, std::size_t bytes);
/// Sets `bytes` bytes to `value`.
void fill_bytes(void* dst, MemorySpace space, int value, std::size_t bytes);

/// An owning buffer in one memory space (RAII: freed when it goes out of scope).
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::size_t bytes, MemorySpace space);
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(data_, o.data_);
      std::swap(bytes_, o.bytes_);
      std::swap(space_, o.space_);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T> T* as() { return static_cast<T*>(data_); }
  template <class T> const T* as() const { return static_cast<const T*>(data_); }
  std::size_t bytes() const { return bytes_; }
  MemorySpace space() const { return space_; }
  void reset() noexcept;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  MemorySpace space_ = MemorySpace::host;
};

}  // namespace comm
