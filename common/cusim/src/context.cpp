// The native contexts' start routine (x86-64) and the Boost.Context variant's state; see context.h.
#include "context.h"

#if !defined(CUSIM_CONTEXT_BOOST)
// The first resumption of a context made by make_context jumps here with entry and arg at the
// stack pointer.
asm(R"(
    .text
    .globl cusim_context_start
    .type cusim_context_start, @function
    .p2align 4
cusim_context_start:
    .cfi_startproc
    .cfi_undefined rip
    movq 8(%rsp), %rdi
    callq *(%rsp)
    ud2
    .cfi_endproc
    .size cusim_context_start, .-cusim_context_start
)");
#else
namespace cusim::detail::context_impl {
thread_local Context* starting = nullptr;
}
#endif
