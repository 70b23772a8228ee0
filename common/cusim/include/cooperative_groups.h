// cusim's cooperative_groups.h: thread_block and statically or dynamically sized tiles of a warp,
// with the collectives labs use (sync, shfl*, ballot, any, all, thread_rank, size).
#pragma once
#include "cuda_runtime.h"

namespace cooperative_groups {

class thread_block {
public:
    void sync(const cusim::site& where = cusim::site::current()) const { __syncthreads(where); }
    static void barrier_wait() { __syncthreads(); }
    unsigned long long thread_rank() const {
        return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    }
    unsigned long long size() const { return static_cast<unsigned long long>(blockDim.x) * blockDim.y * blockDim.z; }
    unsigned long long num_threads() const { return size(); }
    dim3 group_index() const { return dim3(blockIdx); }
    dim3 thread_index() const { return dim3(threadIdx); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

namespace detail {
inline unsigned block_linear_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
}  // namespace detail

/// A tile of `size_` consecutive threads inside one warp (size a power of two, at most 32).
class thread_block_tile_base {
public:
    explicit thread_block_tile_base(unsigned size) : size_(size) {
        const unsigned lane = detail::block_linear_rank() % 32u;
        const unsigned first = lane & ~(size - 1u);
        mask_ = (size == 32u) ? 0xffffffffu : (((1u << size) - 1u) << first);
        rank_ = lane - first;
        meta_rank_ = detail::block_linear_rank() / size;
    }
    void sync(const cusim::site& where = cusim::site::current()) const { __syncwarp(mask_, where); }
    unsigned long long thread_rank() const { return rank_; }
    unsigned long long size() const { return size_; }
    unsigned long long num_threads() const { return size_; }
    unsigned long long meta_group_rank() const { return meta_rank_; }
    unsigned long long meta_group_size() const { return (thread_block().size() + size_ - 1) / size_; }

    template <class T>
    T shfl(T var, int src_rank, const cusim::site& where = cusim::site::current()) const {
        return __shfl_sync(mask_, var, src_rank, static_cast<int>(size_), where);
    }
    template <class T>
    T shfl_down(T var, unsigned delta, const cusim::site& where = cusim::site::current()) const {
        return __shfl_down_sync(mask_, var, delta, static_cast<int>(size_), where);
    }
    template <class T>
    T shfl_up(T var, unsigned delta, const cusim::site& where = cusim::site::current()) const {
        return __shfl_up_sync(mask_, var, delta, static_cast<int>(size_), where);
    }
    template <class T>
    T shfl_xor(T var, unsigned lane_mask, const cusim::site& where = cusim::site::current()) const {
        return __shfl_xor_sync(mask_, var, static_cast<int>(lane_mask), static_cast<int>(size_), where);
    }
    unsigned ballot(int predicate, const cusim::site& where = cusim::site::current()) const {
        // Bits are relative to the tile, as in CUDA.
        const unsigned lane0 = detail::block_linear_rank() % 32u - rank_;
        return __ballot_sync(mask_, predicate, where) >> lane0;
    }
    int any(int predicate, const cusim::site& where = cusim::site::current()) const {
        return __any_sync(mask_, predicate, where);
    }
    int all(int predicate, const cusim::site& where = cusim::site::current()) const {
        return __all_sync(mask_, predicate, where);
    }

private:
    unsigned size_;
    unsigned mask_;
    unsigned rank_;
    unsigned meta_rank_;
};

template <unsigned Size, class Parent = void>
class thread_block_tile : public thread_block_tile_base {
    static_assert(Size >= 1 && Size <= 32 && (Size & (Size - 1)) == 0,
                  "tiled_partition<Size>: Size must be a power of two no larger than 32");

public:
    thread_block_tile() : thread_block_tile_base(Size) {}
    // `thread_block_tile<32> t = tiled_partition<32>(block);` as in the CUDA guide.
    template <class P>
    thread_block_tile(const thread_block_tile<Size, P>& other) : thread_block_tile_base(other) {}
    static constexpr unsigned long long num_threads() { return Size; }
    static constexpr unsigned long long size() { return Size; }
};

/// The dynamically sized tile of `tiled_partition(block, n)`: as in CUDA, only sync, thread_rank
/// and size (collectives need the statically sized thread_block_tile<N>).
class thread_group : private thread_block_tile_base {
public:
    explicit thread_group(unsigned size) : thread_block_tile_base(size) {}
    using thread_block_tile_base::num_threads;
    using thread_block_tile_base::size;
    using thread_block_tile_base::sync;
    using thread_block_tile_base::thread_rank;
};

template <unsigned Size, class ParentT>
thread_block_tile<Size, ParentT> tiled_partition(const ParentT&) {
    return thread_block_tile<Size, ParentT>();
}

inline thread_group tiled_partition(const thread_block&, unsigned size) { return thread_group(size); }

template <class Group>
void sync(const Group& g, const cusim::site& where = cusim::site::current()) {
    g.sync(where);
}

}  // namespace cooperative_groups
