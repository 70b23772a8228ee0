// cusim internals: how a simulated thread hands the CPU to the next one. Not for lab code.
//
// On x86-64 Linux a fiber switch is a few instructions inlined at the place that waits: the
// `__syncthreads()` or warp intrinsic in kernel code, the thread exit in the scheduler. The
// scheduler does the bookkeeping in an ordinary function call (barrier_arrive, warp_arrive) and
// returns which context to leave and which to resume; the switch itself saves the stack pointer,
// frame pointer and a resume address, loads the other context's and jumps there.
//
// Why inline, and a jump: every waiting site has its own jump instruction, and all the threads of
// a block pass the same sites in the same order, so the processor's branch predictor learns where
// each site's jump goes (the next thread resumes at the same place as the one before it). The
// return-address stack is never disturbed, so the resumed thread's returns are predicted too. A
// switch through a shared function (Boost.Context's jump_fcontext, or a call/ret switch) makes
// each resumed thread mispredict one or more returns, the larger part of a switch's cost.
//
// Elsewhere (and in the test build cusim_fcontext) the scheduler switches with Boost.Context
// itself, and barrier_arrive/warp_arrive return an empty handoff: the thread has already been
// suspended and resumed when they return.
#pragma once

namespace cusim::detail {

/// A suspended execution context (native switch): where to continue, on which stack.
struct FiberContext {
    void* sp = nullptr;
    void* pc = nullptr;
    void* bp = nullptr;
};

/// What a waiting thread does next: leave `from` and resume `to`; nothing when `to` is null.
struct Handoff {
    FiberContext* from;
    FiberContext* to;
};

#if defined(__x86_64__) && defined(__linux__)
#define CUSIM_INLINE_SWITCH 1
/// Saves the running context in `from` and resumes `to`; returns when a switch resumes `from`.
/// Every register the ABI lets a call preserve is declared clobbered, so the compiler keeps
/// live values in the frame, which the switch preserves with the stack pointer.
__attribute__((always_inline)) inline void switch_fibers(FiberContext* from, FiberContext* to) {
    asm volatile(
        "leaq 1f(%%rip), %%rax\n\t"
        "movq %%rax, 8(%%rdi)\n\t"
        "movq %%rsp, 0(%%rdi)\n\t"
        "movq %%rbp, 16(%%rdi)\n\t"
        "movq 16(%%rsi), %%rbp\n\t"
        "movq 0(%%rsi), %%rsp\n\t"
        "jmpq *8(%%rsi)\n"
        "1:"
        : "+D"(from), "+S"(to)
        :
        : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory", "cc",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm12", "xmm13", "xmm14", "xmm15"
#if defined(__AVX512F__)
          ,
          "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
          "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#endif
    );
}
#endif

__attribute__((always_inline)) inline void complete_handoff(const Handoff& h) {
#if defined(CUSIM_INLINE_SWITCH)
    if (h.to) switch_fibers(h.from, h.to);
#else
    (void)h;
#endif
}

}  // namespace cusim::detail
