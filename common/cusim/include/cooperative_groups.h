// cusim's cooperative_groups.h: thread_group, thread_block, tiles of a warp (static
// thread_block_tile<N> and dynamic tiled_partition), tiles of several warps (thread_block_tile<64>
// to <512>, with block_tile_memory), coalesced_threads(), labeled_partition() and
// binary_partition(), and the grid group of a cooperative launch, with the collectives CUDA gives
// them (sync, shfl*, ballot, any, all, ...).
// cg::reduce and the scans are in <cooperative_groups/reduce.h> and <cooperative_groups/scan.h>.
#pragma once
#include <type_traits>
#include "cuda_runtime.h"
#include "cusim/sync_api.h"

namespace cooperative_groups {

namespace detail {
inline unsigned block_linear_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned lane() { return block_linear_rank() % 32u; }
/// The barrier of the multi-warp tile of @p size threads the caller is in.
inline void multi_warp_sync(unsigned long long size, const cusim::site& where) {
    const unsigned first = static_cast<unsigned>(block_linear_rank() / size * size);
    const unsigned rest = block_size() - first;
    cusim::detail::complete_handoff(
        cusim::detail::tile_barrier_arrive(first, rest < size ? rest : static_cast<unsigned>(size), where));
}
}  // namespace detail

/// Any group of threads: what thread_block, tiles, coalesced groups and the grid convert to.
class thread_group {
public:
    void sync(const cusim::site& where = cusim::site::current()) const {
        switch (kind_) {
            case kind::block: __syncthreads(where); break;
            case kind::warp: __syncwarp(mask_, where); break;
            case kind::grid: cusim::detail::grid_barrier(where); break;
            case kind::multi_warp: detail::multi_warp_sync(size_, where); break;
        }
    }
    unsigned long long thread_rank() const { return rank_; }
    unsigned long long size() const { return size_; }
    unsigned long long num_threads() const { return size_; }
    /// The lanes of the warp in this group (tiles and coalesced groups), as __activemask() bits.
    unsigned get_mask() const { return mask_; }

protected:
    enum class kind : unsigned char { block, warp, grid, multi_warp };
    thread_group(kind k, unsigned long long size, unsigned long long rank, unsigned mask)
        : kind_(k), size_(size), rank_(rank), mask_(mask) {}
    kind kind_;
    unsigned long long size_;
    unsigned long long rank_;
    unsigned mask_;
};

class thread_block : public thread_group {
public:
    thread_block() : thread_group(kind::block, detail::block_size(), detail::block_linear_rank(), 0) {}
    void sync(const cusim::site& where = cusim::site::current()) const { __syncthreads(where); }
    static void barrier_wait() { __syncthreads(); }
    dim3 group_index() const { return dim3(blockIdx); }
    dim3 thread_index() const { return dim3(threadIdx); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};

inline thread_block this_thread_block() { return thread_block(); }

/// Scratch memory for the tiles of several warps of a block of at most MaxBlockSize threads
/// (a `__shared__` variable; GPUs of compute capability 8.0 and later keep it in reserved shared
/// memory). cusim keeps multi-warp tile state itself; the object only stands for it.
template <unsigned int MaxBlockSize = 1024>
struct alignas(8) block_tile_memory {
private:
    char scratch_[16 + 5 * 8 + MaxBlockSize / 32 * 8];
};
template <unsigned int MaxBlockSize>
inline thread_block this_thread_block(block_tile_memory<MaxBlockSize>&) { return thread_block(); }

/// The threads of a warp-level group (a tile or coalesced group) with its collectives. Ranks are
/// the positions of the group's lanes in `mask`, lowest lane first.
class warp_group_base : public thread_group {
    // A group's shuffles move any trivially copyable type, as CUDA's cooperative groups do (the
    // __shfl_*_sync intrinsics take at most 8 bytes): wider values go as 8-byte words, one
    // shuffle each, every lane in the same order (shfl_scan's uint4 through tile.shfl_xor).
    template <class T>
    T shfl_lane(T var, int lane, const cusim::site& where) const {
        if constexpr (sizeof(T) <= 8) {
            return __shfl_sync(mask_, var, lane, 32, where);
        } else {
            static_assert(__is_trivially_copyable(T), "cooperative groups shuffle trivially copyable types");
            constexpr unsigned long words = (sizeof(T) + 7) / 8;
            unsigned long long w[words] = {};
            __builtin_memcpy(w, &var, sizeof(T));
            for (unsigned long i = 0; i < words; ++i) w[i] = __shfl_sync(mask_, w[i], lane, 32, where);
            T out;
            __builtin_memcpy(&out, w, sizeof(T));
            return out;
        }
    }

public:
    template <class T>
    T shfl(T var, unsigned src_rank, const cusim::site& where = cusim::site::current()) const {
        return shfl_lane(var, lane_of(static_cast<unsigned>(src_rank % size_)), where);
    }
    template <class T>
    T shfl_down(T var, unsigned delta, const cusim::site& where = cusim::site::current()) const {
        const unsigned long long src = rank_ + delta;
        return shfl_lane(var, src < size_ ? lane_of(static_cast<unsigned>(src)) : my_lane(), where);
    }
    template <class T>
    T shfl_up(T var, unsigned delta, const cusim::site& where = cusim::site::current()) const {
        return shfl_lane(var, rank_ >= delta ? lane_of(static_cast<unsigned>(rank_ - delta)) : my_lane(), where);
    }
    template <class T>
    T shfl_xor(T var, unsigned lane_mask, const cusim::site& where = cusim::site::current()) const {
        const unsigned long long src = rank_ ^ lane_mask;
        return shfl_lane(var, src < size_ ? lane_of(static_cast<unsigned>(src)) : my_lane(), where);
    }
    /// Bits by rank in the group, as in CUDA.
    unsigned ballot(int predicate, const cusim::site& where = cusim::site::current()) const {
        const unsigned lanes = __ballot_sync(mask_, predicate, where);
        unsigned bits = 0, r = 0;
        for (unsigned l = 0; l < 32; ++l)
            if ((mask_ >> l) & 1u) bits |= ((lanes >> l) & 1u) << r++;
        return bits;
    }
    int any(int predicate, const cusim::site& where = cusim::site::current()) const {
        return __any_sync(mask_, predicate, where);
    }
    int all(int predicate, const cusim::site& where = cusim::site::current()) const {
        return __all_sync(mask_, predicate, where);
    }
    template <class T>
    unsigned match_any(T value, const cusim::site& where = cusim::site::current()) const {
        return compact(__match_any_sync(mask_, value, where));
    }
    template <class T>
    unsigned match_all(T value, int& pred, const cusim::site& where = cusim::site::current()) const {
        return compact(__match_all_sync(mask_, value, &pred, where));
    }
    unsigned long long meta_group_rank() const { return meta_rank_; }
    unsigned long long meta_group_size() const { return meta_size_; }

protected:
    warp_group_base(unsigned long long size, unsigned long long rank, unsigned mask, unsigned meta_rank,
                    unsigned meta_size)
        : thread_group(kind::warp, size, rank, mask), meta_rank_(meta_rank), meta_size_(meta_size) {}
    unsigned my_lane() const { return detail::lane(); }
    unsigned lane_of(unsigned rank) const {
        unsigned m = mask_;
        for (unsigned r = 0; r < rank; ++r) m &= m - 1;
        return static_cast<unsigned>(__builtin_ctz(m));
    }
    unsigned compact(unsigned lanes) const {
        unsigned bits = 0, r = 0;
        for (unsigned l = 0; l < 32; ++l)
            if ((mask_ >> l) & 1u) bits |= ((lanes >> l) & 1u) << r++;
        return bits;
    }
    unsigned meta_rank_;
    unsigned meta_size_;
};

/// A tile of `size` consecutive threads of the block inside one warp (size a power of two <= 32).
class thread_block_tile_base : public warp_group_base {
public:
    explicit thread_block_tile_base(unsigned size)
        : warp_group_base(size, detail::lane() % size, tile_mask(size),
                          detail::block_linear_rank() / size, (detail::block_size() + size - 1) / size) {}

private:
    static unsigned tile_mask(unsigned size) {
        const unsigned first = detail::lane() & ~(size - 1u);
        return size == 32u ? 0xffffffffu : (((1u << size) - 1u) << first);
    }
};

/// A tile of Size (64, 128, 256 or 512) consecutive threads of the block: several warps. Its
/// collectives (sync, shfl as a broadcast, any, all, cg::reduce) move values of at most 8 bytes
/// through shared memory, as CUDA's do.
template <unsigned Size>
class multi_warp_tile : public thread_group {
    static_assert(Size == 64 || Size == 128 || Size == 256 || Size == 512,
                  "tiled_partition<Size>: a tile of several warps has 64, 128, 256 or 512 threads");

public:
    multi_warp_tile()
        : thread_group(kind::multi_warp, Size, detail::block_linear_rank() % Size, 0),
          meta_rank_(detail::block_linear_rank() / Size),
          meta_size_((detail::block_size() + Size - 1) / Size) {}
    static constexpr unsigned long long num_threads() { return Size; }
    static constexpr unsigned long long size() { return Size; }
    void sync(const cusim::site& where = cusim::site::current()) const { detail::multi_warp_sync(Size, where); }
    unsigned long long meta_group_rank() const { return meta_rank_; }
    unsigned long long meta_group_size() const { return meta_size_; }
    /// The value of rank @p src_rank (a broadcast: every thread of the tile calls it).
    template <class T>
    T shfl(T var, unsigned src_rank, const cusim::site& where = cusim::site::current()) const {
        static_assert(sizeof(T) <= 8, "Collectives with tiles larger than 32 threads are limited to types of at most 8 bytes");
        T* slot = tile_values<T>() + meta_rank_ * Size;
        sync(where);
        if (rank_ == src_rank % Size) *slot = var;
        sync(where);
        const T out = *slot;
        return out;
    }
    int any(int predicate, const cusim::site& where = cusim::site::current()) const {
        return fold(predicate != 0, where, [](bool a, bool b) { return a || b; });
    }
    int all(int predicate, const cusim::site& where = cusim::site::current()) const {
        return fold(predicate != 0, where, [](bool a, bool b) { return a && b; });
    }
    /// op over every thread's @p value in rank order (cg::reduce).
    template <class T, class Op>
    T fold(const T& value, const cusim::site& where, Op&& op) const {
        static_assert(sizeof(T) <= 8, "Collectives with tiles larger than 32 threads are limited to types of at most 8 bytes");
        T* values = tile_values<T>() + meta_rank_ * Size;
        values[rank_] = value;
        sync(where);
        const unsigned long long first = meta_rank_ * Size;
        const unsigned long long n = detail::block_size() - first < Size ? detail::block_size() - first : Size;
        T acc = values[0];
        for (unsigned long long r = 1; r < n; ++r) acc = static_cast<T>(op(acc, values[r]));
        sync(where);
        return acc;
    }

private:
    // Shared memory of the block for the tiles' values: one slot per thread.
    template <class T>
    static T* tile_values() {
        static const char key = 0;
        return static_cast<T*>(cusim::detail::shared_alloc(&key, sizeof(T) * detail::block_size(), alignof(T)));
    }
    unsigned long long meta_rank_;
    unsigned long long meta_size_;
};

namespace detail {
template <unsigned Size, class Parent>
struct tile_base {
    static_assert(Size >= 1 && (Size & (Size - 1)) == 0,
                  "tiled_partition<Size>: Size must be a power of two no larger than 32 (one warp), or 64, 128, "
                  "256 or 512 (several warps)");
    using type = thread_block_tile_base;
};
template <unsigned Size, class Parent>
    requires(Size > 32)
struct tile_base<Size, Parent> {
    using type = multi_warp_tile<Size>;
};
}  // namespace detail

template <unsigned Size, class Parent = void>
class thread_block_tile : public detail::tile_base<Size, Parent>::type {
    using base = typename detail::tile_base<Size, Parent>::type;

public:
    thread_block_tile() : base(make()) {}
    // `thread_block_tile<32> t = tiled_partition<32>(block);` as in the CUDA guide.
    template <class P>
    thread_block_tile(const thread_block_tile<Size, P>& other) : base(other) {}
    static constexpr unsigned long long num_threads() { return Size; }
    static constexpr unsigned long long size() { return Size; }

private:
    static base make() {
        if constexpr (Size > 32)
            return base();
        else
            return base(Size);
    }
};

template <unsigned Size, class ParentT>
thread_block_tile<Size, ParentT> tiled_partition(const ParentT&) {
    // A tile of a tile is smaller than its parent (nvcc refuses tiled_partition<32>(warp)).
    if constexpr (requires { typename std::integral_constant<unsigned long long, ParentT::size()>; })
        static_assert(Size < ParentT::size(), "Tile size bigger or equal to the parent group size");
    return thread_block_tile<Size, ParentT>();
}

/// `tiled_partition(parent, n)`: as in CUDA a thread_group (sync, thread_rank, size); tiles of a
/// tile are tiles of the block, since tiles are aligned to their size.
inline thread_group tiled_partition(const thread_group&, unsigned size) { return thread_block_tile_base(size); }

/// The lanes of the warp that reach this call together (cusim: every lane of the warp that can
/// run gets there or to a wait first; the group is those at this same call).
class coalesced_group : public warp_group_base {
public:
    explicit coalesced_group(unsigned mask)
        : warp_group_base(__builtin_popcount(mask), __builtin_popcount(mask & ((1u << detail::lane()) - 1u)), mask, 0, 1) {}
    void sync(const cusim::site& where = cusim::site::current()) const { __syncwarp(mask_, where); }
};

inline coalesced_group coalesced_threads(const cusim::site& where = cusim::site::current()) {
    return coalesced_group(cusim::detail::coalesced_mask(where));
}

/// `labeled_partition(group, label)`: the threads of a warp-sized or smaller tile, or of a coalesced
/// group, that pass the same label, as a coalesced_group; every thread of @p group calls it.
/// `binary_partition(group, predicate)`: the same with two labels.
template <class Group>
coalesced_group labeled_partition(const Group& group, int label, const cusim::site& where = cusim::site::current()) {
    static_assert(std::is_base_of_v<warp_group_base, Group>,
                  "labeled_partition: a thread_block_tile of at most 32 threads or a coalesced_group");
    return coalesced_group(__match_any_sync(group.get_mask(), label, where));
}
template <class Group>
coalesced_group binary_partition(const Group& group, bool predicate, const cusim::site& where = cusim::site::current()) {
    static_assert(std::is_base_of_v<warp_group_base, Group>,
                  "binary_partition: a thread_block_tile of at most 32 threads or a coalesced_group");
    const unsigned mask = group.get_mask();
    const unsigned yes = __ballot_sync(mask, predicate, where);
    return coalesced_group(predicate ? yes : mask & ~yes);
}

/// The grid of a launch. sync() is a grid-wide barrier; it needs cudaLaunchCooperativeKernel, which
/// makes every block co-resident (cusim: a launch of several blocks without it ends with
/// cudaErrorLaunchFailure at the sync, where a GPU would hang or fault).
class grid_group : public thread_group {
public:
    grid_group()
        : thread_group(kind::grid,
                       static_cast<unsigned long long>(detail::block_size()) * gridDim.x * gridDim.y * gridDim.z,
                       static_cast<unsigned long long>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) *
                               detail::block_size() +
                           detail::block_linear_rank(),
                       0) {}
    /// Whether the grid may synchronize: the kernel was launched with cudaLaunchCooperativeKernel.
    bool is_valid() const { return cusim::detail::cooperative_launch(); }
    unsigned long long num_blocks() const { return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z; }
    unsigned long long block_rank() const { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }
    dim3 group_dim() const { return gridDim; }
    dim3 block_index() const { return dim3(blockIdx); }
    dim3 dim_blocks() const { return gridDim; }
};

inline grid_group this_grid() { return grid_group(); }

template <class Group>
void sync(const Group& g, const cusim::site& where = cusim::site::current()) {
    g.sync(where);
}

}  // namespace cooperative_groups
