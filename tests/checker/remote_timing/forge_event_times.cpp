// A hostile submission's timing attack, for the tests of a judge's timing (remote_timing_test.cpp):
// before main() it patches its own process's cudaEventElapsedTime to report 1 microsecond for any
// pair of events, so that every timing the process measures looks fast. Linked into the worker of
// checker_remote_timing_forged_test only. x86-64: the patch is a jump written over the function's
// first bytes.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace {

cudaError_t forged_elapsed_time(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

struct Patch {
  Patch() {
#if defined(__x86_64__)
    auto* target = reinterpret_cast<unsigned char*>(reinterpret_cast<void*>(&cudaEventElapsedTime));
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    void* first = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(target) & ~(page - 1));
    if (mprotect(first, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return;
    const auto to = reinterpret_cast<std::uint64_t>(reinterpret_cast<void*>(&forged_elapsed_time));
    const unsigned char jump[12] = {0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0};  // movabs rax, to; jmp rax
    std::memcpy(target, jump, sizeof jump);
    std::memcpy(target + 2, &to, sizeof to);
    mprotect(first, 2 * page, PROT_READ | PROT_EXEC);
#endif
  }
} patch;

}  // namespace
