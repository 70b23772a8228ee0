// See crash_report.h. Async-signal-safe: the handler only writes to stderr and walks the stack
// with the unwinder that install() has loaded beforehand.
#include "crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace wb::crash_report {
namespace {

void write_text(const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

// The first frame written is the interrupted instruction itself, the others are return
// addresses (symbolize.py resolves the first as it is and the others one byte back).
void on_crash(int sig, siginfo_t*, void* context) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char* name = sigabbrev_np(sig);
  write_text("wb: the lab's process crashed with SIG");
  write_text(name != nullptr ? name : "?");
  write_text("; backtrace:\n");
  // frames[0] is this handler and frames[1] the kernel's signal trampoline.
  if (n > 2) {
#if defined(__x86_64__)
    frames[2] = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#else
    (void)context;
#endif
    backtrace_symbols_fd(frames + 2, n - 2, STDERR_FILENO);
  }
  write_text("wb: end of backtrace\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install() {
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now: not safe to do inside a signal handler
  static char stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, nullptr);  // a stack overflow is reported too
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace wb::crash_report
