// <cooperative_groups/memcpy_async.h>: cg::memcpy_async (a copy the threads of a group make
// together, its size in bytes or, with layouts, in elements), cg::wait and cg::wait_prior<N>.
// Each thread of the group makes its share of the copy when it calls memcpy_async, the earliest
// completion a GPU may give it; wait and wait_prior synchronize the group, after which every
// thread sees the whole copy, as on a GPU.
#pragma once
#include <cstddef>

#include "../cooperative_groups.h"
#include "../cuda/barrier"

namespace cooperative_groups {

template <class Group, class T, class Size>
inline void memcpy_async(const Group& group, T* dst, const T* src, const Size& count,
                         const cusim::site& where = cusim::site::current()) {
    cuda::cusim_detail::check_copy(dst, src, count, where);
    cuda::cusim_detail::copy_share(static_cast<void*>(dst), static_cast<const void*>(src),
                                   static_cast<std::size_t>(count), group.thread_rank(), group.size());
}
/// The copy of min(dst_count, src_count) elements.
template <class Group, class T, class DstLayout, class SrcLayout>
inline void memcpy_async(const Group& group, T* dst, const DstLayout& dst_count, const T* src,
                         const SrcLayout& src_count) {
    const std::size_t n = static_cast<std::size_t>(dst_count) < static_cast<std::size_t>(src_count)
                              ? static_cast<std::size_t>(dst_count)
                              : static_cast<std::size_t>(src_count);
    cuda::cusim_detail::copy_share(static_cast<void*>(dst), static_cast<const void*>(src), n * sizeof(T),
                                   group.thread_rank(), group.size());
}
/// Waits for the group's copies but the last @p Stage batches (all of them, here), then syncs the group.
template <unsigned int Stage, class Group>
inline void wait_prior(const Group& group) {
    group.sync();
}
template <class Group>
inline void wait(const Group& group) {
    group.sync();
}

}  // namespace cooperative_groups
