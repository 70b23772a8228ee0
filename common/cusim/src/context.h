// Execution contexts for cusim's fibers: create a context on a stack, switch between contexts.
//
// Two implementations with one interface:
//
// - Native (x86-64 System V, the default there): a context is a saved stack pointer. switch_context
//   is an ordinary function that pushes the six callee-saved registers, swaps the stack pointer,
//   pops the other context's registers and returns into it. Because every suspension is a `call`
//   balanced by a `ret`, the CPU's return-address predictor stays in step across switches: fibers
//   of one kernel suspend at the same call sites, so the return into the resumed fiber, and every
//   return after it, is predicted. The floating-point control words are not saved: every fiber of
//   a worker runs with the worker thread's modes (kernel code cannot change them).
// - Boost.Context (CUSIM_CONTEXT_BOOST, and every other platform): fcontext's make_fcontext and
//   jump_fcontext. jump_fcontext leaves through an indirect jump, so the return predictor is off
//   by one after every switch; on the reduce_smem benchmark a fiber switch costs about twice as
//   much as the native one (see docs/perf/cusim.md).
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

namespace cusim::detail {

using ContextEntry = void (*)(void* arg);

#if !defined(CUSIM_CONTEXT_BOOST)

/// A suspended execution context: its saved stack pointer.
struct Context {
    void* sp = nullptr;
};

extern "C" void cusim_switch_context(void** save_sp, void* to_sp);
extern "C" void cusim_context_start();

/// Prepares `c` to run entry(arg) on the stack whose highest usable address is `top`, the first
/// time it is switched to. `entry` must never return.
inline void make_context(Context& c, char* top, std::size_t /*size*/, ContextEntry entry, void* arg) {
    // After switch_context pops the six registers it returns into cusim_context_start with the
    // stack pointer at `top` rounded down to 16 bytes, as the ABI wants it before a call;
    // cusim_context_start calls entry(arg) (r13 holds entry, r12 arg).
    auto** sp = reinterpret_cast<void**>(reinterpret_cast<std::uintptr_t>(top) & ~std::uintptr_t(15));
    *--sp = reinterpret_cast<void*>(&cusim_context_start);
    *--sp = nullptr;                               // rbp
    *--sp = nullptr;                               // rbx
    *--sp = arg;                                   // r12
    *--sp = reinterpret_cast<void*>(entry);        // r13
    *--sp = nullptr;                               // r14
    *--sp = nullptr;                               // r15
    c.sp = sp;
}

/// Saves the running context into `from` and resumes `to`; returns when something switches back
/// to `from`.
__attribute__((always_inline)) inline void switch_context(Context* from, Context* to) {
    cusim_switch_context(&from->sp, to->sp);
}

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

#endif

}  // namespace cusim::detail
