// Device-side assert: inside a kernel a failed assert() aborts the launch with cudaErrorAssert and
// reports the thread, block, file and line, as on a GPU; on the host it behaves as the C library's.
#pragma once
#include <source_location>

namespace cusim::detail {
void assert_fail(const char* expr, const char* file, unsigned line, const char* func);
}
#ifdef assert
#undef assert
#endif
#ifdef NDEBUG
#define assert(expr) (static_cast<void>(0))
#else
#define assert(expr) \
    (static_cast<bool>(expr) ? static_cast<void>(0) : ::cusim::detail::assert_fail(#expr, __FILE__, __LINE__, __func__))
#endif
