// Execution contexts for cusim's fibers: create a context on a stack, switch between contexts.
//
// Two implementations with one interface:
//
// - Native (x86-64 Linux, the default there): cusim/fiber.h's switch, a few instructions inlined
//   where a thread waits (kernel code, the scheduler), which saves the stack pointer, frame pointer
//   and a resume address and jumps to the other context's. Each waiting site has its own jump,
//   which the branch predictor learns, and the return-address stack stays in step. The
//   floating-point control words are not saved: every fiber of a worker runs with the worker
//   thread's modes (kernel code cannot change them).
// - Boost.Context (CUSIM_CONTEXT_BOOST, and every other platform): fcontext's make_fcontext and
//   jump_fcontext, called by the scheduler only. jump_fcontext leaves through an indirect jump
//   shared by all switches, so resumed threads mispredict their returns; on the reduce_smem
//   benchmark it is markedly slower (docs/perf/cusim.md).
//
// Both are tested: the cusim suite runs on the default, and tests/cusim also links the fault and
// synchronization tests against a Boost.Context build of cusim (cusim_fcontext).
#pragma once
#include <cstddef>
#include <cstdint>

#if !defined(CUSIM_CONTEXT_BOOST) && !(defined(__x86_64__) && defined(__linux__))
#define CUSIM_CONTEXT_BOOST 1
#endif

#if defined(CUSIM_CONTEXT_BOOST)
#include <boost/context/detail/fcontext.hpp>
#endif

#include "cusim/fiber.h"

namespace cusim::detail {

using ContextEntry = void (*)(void* arg);

#if !defined(CUSIM_CONTEXT_BOOST)
#define CUSIM_NATIVE_SWITCH 1

/// A suspended execution context (see cusim/fiber.h): stack pointer, resume address, frame pointer.
using Context = FiberContext;

extern "C" void cusim_context_start();

/// Prepares `c` to run entry(arg) on the stack whose highest usable address is `top`, the first
/// time it is switched to. `entry` must never return.
inline void make_context(Context& c, char* top, std::size_t /*size*/, ContextEntry entry, void* arg) {
    // cusim_context_start finds entry and arg at the stack pointer, which is 16-byte aligned for
    // its call, as the ABI wants.
    auto** sp = reinterpret_cast<void**>(reinterpret_cast<std::uintptr_t>(top) & ~std::uintptr_t(15));
    *--sp = arg;
    *--sp = reinterpret_cast<void*>(entry);
    c.sp = sp;
    c.pc = reinterpret_cast<void*>(&cusim_context_start);
    c.bp = nullptr;
}

/// Saves the running context into `from` and resumes `to`; returns when something switches back
/// to `from`.
__attribute__((always_inline)) inline void switch_context(Context* from, Context* to) { switch_fibers(from, to); }

/// The stack pointer of a suspended context: what it keeps on its stack lies at and above it.
inline const char* suspended_stack_pointer(const Context& c) { return static_cast<const char*>(c.sp); }

#else  // Boost.Context fcontext

struct Context {
    boost::context::detail::fcontext_t fctx = nullptr;
    ContextEntry entry = nullptr;
    void* arg = nullptr;
};

namespace context_impl {
extern thread_local Context* starting;
// The first switch into a context passes the switching context's Context* as data: record
// where that context was suspended, then run the entry function.
inline void start(boost::context::detail::transfer_t t) {
    auto* from = static_cast<Context*>(t.data);
    from->fctx = t.fctx;
    // switch_context stored the target Context in `starting`; its entry and argument travel
    // with it.
    Context* self = starting;
    self->entry(self->arg);
    __builtin_unreachable();
}
}  // namespace context_impl

inline void make_context(Context& c, char* top, std::size_t size, ContextEntry entry, void* arg) {
    c.fctx = boost::context::detail::make_fcontext(top, size, context_impl::start);
    c.entry = entry;
    c.arg = arg;
}

__attribute__((always_inline)) inline void switch_context(Context* from, Context* to) {
    context_impl::starting = to;  // read by context_impl::start when `to` runs for the first time
    boost::context::detail::transfer_t t = boost::context::detail::jump_fcontext(to->fctx, from);
    static_cast<Context*>(t.data)->fctx = t.fctx;
}

/// The stack pointer of a suspended context: fcontext keeps its registers at and above fctx.
inline const char* suspended_stack_pointer(const Context& c) { return static_cast<const char*>(c.fctx); }

#endif

}  // namespace cusim::detail
