// <cuda_pipeline_primitives.h>: the thread's asynchronous copies as C functions,
// __pipeline_memcpy_async (4, 8 or 16 bytes, the rest of the destination zero-filled when the
// source size is smaller), __pipeline_commit, __pipeline_wait_prior and
// __pipeline_arrive_on. cusim makes each copy when it is issued, the earliest completion a GPU may
// give it, so commits and waits have nothing left to wait for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cusim/sync_api.h"

inline void __pipeline_memcpy_async(void* dst_shared, const void* src_global, std::size_t size_and_align,
                                    std::size_t zfill = 0, const cusim::site& where = cusim::site::current()) {
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        cusim::detail::sync_object_error(cudaErrorLaunchFailure,
                                         "__pipeline_memcpy_async copies 4, 8 or 16 bytes (size_and_align)", where);
    if ((reinterpret_cast<std::uintptr_t>(dst_shared) | reinterpret_cast<std::uintptr_t>(src_global)) &
        (size_and_align - 1))
        cusim::detail::sync_object_error(cudaErrorMisalignedAddress,
                                         "__pipeline_memcpy_async: both pointers must be aligned to the copy's size",
                                         where);
    if (zfill > size_and_align)
        cusim::detail::sync_object_error(cudaErrorLaunchFailure,
                                         "__pipeline_memcpy_async: zfill is larger than the copy", where);
    const std::size_t from_source = size_and_align - zfill;
    std::memcpy(dst_shared, src_global, from_source);
    std::memset(static_cast<char*>(dst_shared) + from_source, 0, zfill);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(std::size_t prior) { (void)prior; }
inline void __pipeline_arrive_on(void* barrier) { (void)barrier; }
