// The native context switch (x86-64 System V) and the Boost.Context variant's state; see context.h.
#include "context.h"

#if !defined(CUSIM_CONTEXT_BOOST)
// cusim_switch_context(void** save_sp, void* to_sp): rdi = where to save this context's stack
// pointer, rsi = the stack pointer of the context to resume. Only the callee-saved registers
// need saving: the caller treats everything else as clobbered by the call.
asm(R"(
    .text
    .globl cusim_switch_context
    .type cusim_switch_context, @function
    .p2align 4
cusim_switch_context:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size cusim_switch_context, .-cusim_switch_context

    .globl cusim_context_start
    .type cusim_context_start, @function
    .p2align 4
cusim_context_start:
    .cfi_startproc
    .cfi_undefined rip
    movq %r12, %rdi
    callq *%r13
    ud2
    .cfi_endproc
    .size cusim_context_start, .-cusim_context_start
)");
#else
namespace cusim::detail::context_impl {
thread_local Context* starting = nullptr;
}
#endif
