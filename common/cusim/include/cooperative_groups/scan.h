// <cooperative_groups/scan.h>: inclusive_scan and exclusive_scan over a tile or coalesced group
// (default operation cg::plus). The exclusive scan's result on rank 0 is T{} here; CUDA leaves it
// undefined for operations other than plus.
#pragma once
#include "reduce.h"

namespace cooperative_groups {

template <class Group, class T, class Op>
std::decay_t<T> inclusive_scan(const Group& group, T&& value, Op&& op, const cusim::site& where = cusim::site::current()) {
    using V = std::decay_t<T>;
    const V v = value;
    return detail::fold_ranks(group, v, op, group.thread_rank() + 1, V{}, where);
}
template <class Group, class T>
std::decay_t<T> inclusive_scan(const Group& group, T&& value, const cusim::site& where = cusim::site::current()) {
    return inclusive_scan(group, static_cast<T&&>(value), plus<std::decay_t<T>>(), where);
}

template <class Group, class T, class Op>
std::decay_t<T> exclusive_scan(const Group& group, T&& value, Op&& op, const cusim::site& where = cusim::site::current()) {
    using V = std::decay_t<T>;
    const V v = value;
    return detail::fold_ranks(group, v, op, group.thread_rank(), V{}, where);
}
template <class Group, class T>
std::decay_t<T> exclusive_scan(const Group& group, T&& value, const cusim::site& where = cusim::site::current()) {
    return exclusive_scan(group, static_cast<T&&>(value), plus<std::decay_t<T>>(), where);
}

}  // namespace cooperative_groups
