// The worker: the process that holds the student's code. It serves the judge's requests (CUDA
// runtime calls and the lab's interface functions) on the channel fd until the judge closes it.
// Nothing here is trusted: the judge treats every reply as data to check, never as a verdict.
#include <cuda_runtime.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>

#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {
namespace {

std::map<std::string, Handler>& registry() {
  static std::map<std::string, Handler> functions;
  return functions;
}

void write_text(const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

// A crash of the lab's host code: the backtrace goes to stderr between two marker lines, for the
// runner to resolve into file:line (checker/symbolize.py), then the signal takes its course. The
// first frame written is the interrupted instruction itself, the others are return addresses.
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

void install_crash_report() {
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

void serve_one(Op op, Reader& in, Writer& out) {
  switch (op) {
    case Op::Call: {
      const std::string name = in.get_string();
      auto it = registry().find(name);
      if (it == registry().end()) throw ChannelError("the worker has no function " + name);
      it->second(in, out);
      return;
    }
    default:
      if (!is_cuda_op(static_cast<std::uint32_t>(op)))
        throw ChannelError("unknown request " + std::to_string(static_cast<unsigned>(op)));
      serve_cuda(op, in, out);
      return;
  }
}

}  // namespace

void register_function(const std::string& name, Handler handler) { registry()[name] = std::move(handler); }

}  // namespace wb::remote

int main(int argc, char** argv) {
  using namespace wb::remote;
  int fd = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--wb-channel-fd=", 16) == 0) fd = std::atoi(argv[i] + 16);
  }
  if (fd < 0) {
    std::fprintf(stderr,
                 "%s holds a lab's code for its check binary and is started by it; run the check binary "
                 "(or ./workbook check) instead.\n",
                 argv[0]);
    return 2;
  }
  install_crash_report();
  std::uint32_t tag = 0;
  Payload payload;
  while (receive_message(fd, tag, payload)) {
    const Op op = static_cast<Op>(tag);
    if (op == Op::Shutdown) break;
    Reader in(std::move(payload));
    Writer out;
    const std::uint32_t status = serve_reporting_exceptions([&] { serve_one(op, in, out); }, out);
    send_message(fd, status, out);
  }
  return 0;
}
