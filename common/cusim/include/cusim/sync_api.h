// cusim's scheduler entry points for the synchronization objects that live in user memory:
// cuda::barrier (<cuda/barrier>), cuda::pipeline (<cuda/pipeline>) and the asynchronous copies
// that complete into them. Kernel code only; included by those shim headers.
#pragma once
#include <cstddef>

#include "cusim/device.h"

namespace cusim::detail {

/// Parks the calling thread until object_notify(@p object) is called by another thread of its
/// block; @p what names the object in a deadlock report ("a cuda::barrier"). The caller checks its
/// condition again when it resumes.
Handoff object_wait(const void* object, const char* what, const site& where);
/// Readies every thread of the running block parked on @p object (a phase of it completed).
void object_notify(const void* object);
/// Arrival at the barrier of the multi-warp thread_block_tile whose first thread (block linear
/// rank) is @p first and which has @p count threads: parks the caller until all have arrived.
Handoff tile_barrier_arrive(unsigned first, unsigned count, const site& where);
/// Ends the kernel with @p code and a message naming the thread, @p where and @p what went wrong.
[[noreturn]] void sync_object_error(cudaError_t code, const char* what, const site& where);

// The state of a cuda::barrier and the bookkeeping of asynchronous copies live in user memory
// (shared memory, the thread's stack) but are read and written only here, in cusim's library: its
// code is not instrumented, so memcheck and racecheck see the program's accesses, not these.
struct BarrierState {
    std::ptrdiff_t expected;
    std::ptrdiff_t pending;
    unsigned long long phase;
};
void barrier_init(BarrierState* b, std::ptrdiff_t expected);
/// An arrival of @p update (with @p drop, one arrival fewer expected from the next phase on).
/// Returns the phase arrived in; *last is true when the arrival completes it: the caller runs the
/// barrier's completion function, then barrier_complete.
unsigned long long barrier_arrive(BarrierState* b, std::ptrdiff_t update, bool drop, bool* last, const site& where);
void barrier_complete(BarrierState* b);
unsigned long long barrier_phase(const BarrierState* b);
/// A counter in user memory (a pipeline's thread count), read and written here.
unsigned counter_add(unsigned* counter, int delta);
void counter_set(unsigned* counter, unsigned value);
/// Copies issued into a pipeline stage and not made yet (*list: null until the first).
struct AsyncCopies;
void async_copy_add(AsyncCopies** list, void* dst, const void* src, std::size_t size, unsigned long long stage);
/// Makes the copies of stages before @p stage; with ~0ull all of them, and frees the list.
void async_copy_complete(AsyncCopies** list, unsigned long long stage);

__attribute__((always_inline)) inline void wait_on(const void* object, const char* what, const site& where) {
    complete_handoff(object_wait(object, what, where));
}

}  // namespace cusim::detail
