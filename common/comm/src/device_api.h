// Internal: the CUDA side of the library (src/device.cu), present only in builds with CUDA.
#pragma once

#include <cstddef>

#include "comm/types.h"

namespace comm::detail {

int device_count();
void select_device(int local_rank);
void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
/// dst_device/src_device tell where each pointer lives; synchronous.
void device_copy(void* dst, bool dst_device, const void* src, bool src_device, std::size_t bytes);
void device_memset(void* p, int value, std::size_t bytes);
void device_reduce(void* inout, const void* in, std::size_t count, DataType type, RedOp op);
/// Pinned host staging memory from a pool (cudaMallocHost is too slow to call per message).
void* pinned_acquire(std::size_t bytes);
void pinned_release(void* p) noexcept;

}  // namespace comm::detail
