// Device-side assert: inside a kernel a failed assert() aborts the launch with cudaErrorAssert and
// reports the thread, block, file and line, as on a GPU; on the host it behaves as the C library's.
// This header only declares the function; the assert macro itself comes, as with nvcc, from the
// program's own #include <cassert> or <assert.h>, whose cusim wrappers define it
// (cusim/assert_redefine.h).
#pragma once

namespace cusim::detail {
void assert_fail(const char* expr, const char* file, unsigned line, const char* func);
}
