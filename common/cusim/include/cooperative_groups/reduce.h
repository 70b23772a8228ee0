// <cooperative_groups/reduce.h>: cg::reduce over a tile or coalesced group, and the functors
// cg::plus, less (the smaller value), greater (the larger), bit_and, bit_or, bit_xor.
// cusim combines the values in rank order (0, 1, ..., size-1), so integer results equal a GPU's
// exactly; a float sum may round differently from the GPU's tree order.
#pragma once
#include "../cooperative_groups.h"

namespace cooperative_groups {

template <class T> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };

namespace detail {
/// op over the values of ranks [0, upto) of `group`, in rank order; every lane takes part in every
/// shuffle. Returns `fallback` when upto is 0.
template <class Group, class T, class Op>
T fold_ranks(const Group& group, const T& value, Op& op, unsigned long long upto, const T& fallback,
             const cusim::site& where) {
    T acc = fallback;
    for (unsigned long long r = 0; r < group.size(); ++r) {
        const T v = group.shfl(value, static_cast<unsigned>(r), where);
        if (r < upto) acc = r == 0 ? v : static_cast<T>(op(acc, v));
    }
    return acc;
}
}  // namespace detail

template <class Group, class T, class Op>
std::decay_t<T> reduce(const Group& group, T&& value, Op&& op, const cusim::site& where = cusim::site::current()) {
    using V = std::decay_t<T>;
    const V v = value;
    if constexpr (requires { group.fold(v, where, op); })
        return group.fold(v, where, op);  // a tile of several warps
    else
        return detail::fold_ranks(group, v, op, group.size(), V{}, where);
}

}  // namespace cooperative_groups
