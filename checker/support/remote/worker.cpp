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

#if defined(CUSIM)
#include "wb_remote_analysis.h"
#endif
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
    case Op::Malloc: {
      void* p = nullptr;
      const cudaError_t e = cudaMalloc(&p, in.get<std::uint64_t>());
      out.put(e).put<std::uint64_t>(to_wire(p));
      return;
    }
    case Op::Free:
      out.put(cudaFree(from_wire<void*>(in.get<std::uint64_t>())));
      return;
    case Op::MemcpyToDevice: {
      void* dst = from_wire<void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      out.put(cudaMemcpy(dst, in.take(n), n, cudaMemcpyHostToDevice));
      return;
    }
    case Op::MemcpyToHost: {
      const void* src = from_wire<const void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      static std::unique_ptr<char[]> staging;  // lives until the reply is sent
      staging.reset(new char[n > 0 ? n : 1]);
      const cudaError_t e = cudaMemcpy(staging.get(), src, n, cudaMemcpyDeviceToHost);
      out.put(e).put_bulk(staging.get(), n);
      return;
    }
    case Op::MemcpyDeviceToDevice: {
      void* dst = from_wire<void*>(in.get<std::uint64_t>());
      const void* src = from_wire<const void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      const auto stream = from_wire<cudaStream_t>(in.get<std::uint64_t>());
      out.put(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream));
      return;
    }
    case Op::Memset: {
      void* p = from_wire<void*>(in.get<std::uint64_t>());
      const int value = in.get<int>();
      const auto n = in.get<std::uint64_t>();
      const auto stream = from_wire<cudaStream_t>(in.get<std::uint64_t>());
      out.put(cudaMemsetAsync(p, value, n, stream));
      return;
    }
    case Op::Synchronize:
      out.put(cudaDeviceSynchronize());
      return;
    case Op::GetLastError:
      out.put(cudaGetLastError());
      return;
    case Op::PeekAtLastError:
      out.put(cudaPeekAtLastError());
      return;
    case Op::GetDevice: {
      int device = 0;
      const cudaError_t e = cudaGetDevice(&device);
      out.put(e).put(device);
      return;
    }
    case Op::DeviceGetAttribute: {
      const auto attr = in.get<cudaDeviceAttr>();
      const int device = in.get<int>();
      int value = 0;
      const cudaError_t e = cudaDeviceGetAttribute(&value, attr, device);
      out.put(e).put(value);
      return;
    }
    case Op::GetDeviceProperties: {
      cudaDeviceProp prop{};
      const cudaError_t e = cudaGetDeviceProperties(&prop, in.get<int>());
      out.put(e).put(prop);
      return;
    }
    case Op::StreamCreate: {
      cudaStream_t s = nullptr;
      const cudaError_t e = cudaStreamCreate(&s);
      out.put(e).put<std::uint64_t>(to_wire(s));
      return;
    }
    case Op::StreamDestroy:
      out.put(cudaStreamDestroy(from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    case Op::StreamSynchronize:
      out.put(cudaStreamSynchronize(from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventCreate: {
      cudaEvent_t ev = nullptr;
      const cudaError_t e = cudaEventCreate(&ev);
      out.put(e).put<std::uint64_t>(to_wire(ev));
      return;
    }
    case Op::EventDestroy:
      out.put(cudaEventDestroy(from_wire<cudaEvent_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventRecord: {
      const auto ev = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      out.put(cudaEventRecord(ev, from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    }
    case Op::EventSynchronize:
      out.put(cudaEventSynchronize(from_wire<cudaEvent_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventElapsedTime: {
      const auto a = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      const auto b = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      float ms = 0;
      const cudaError_t e = cudaEventElapsedTime(&ms, a, b);
      out.put(e).put(ms);
      return;
    }
    case Op::ErrorString:
      out.put_string(cudaGetErrorString(in.get<cudaError_t>()));
      return;
    case Op::ErrorName:
      out.put_string(cudaGetErrorName(in.get<cudaError_t>()));
      return;
#if defined(CUSIM)
    case Op::AnalysisAvailable:
      out.put<std::uint8_t>(cusim::analysis::available() ? 1 : 0);
      return;
    case Op::AnalysisReset:
      cusim::analysis::reset();
      return;
    case Op::AnalysisMetrics: {
      const auto all = cusim::analysis::metrics();
      out.put<std::uint64_t>(all.size());
      for (const auto& m : all) put_metrics(out, m);
      return;
    }
    case Op::AnalysisReports: {
      const auto all = cusim::analysis::reports();
      out.put<std::uint64_t>(all.size());
      for (const auto& r : all) put_report(out, r);
      return;
    }
    case Op::CheckerDeviceMemory: {
      const cusim::checker::DeviceMemory m = cusim::checker::device_memory();
      out.put(m.allocations).put(m.bytes);
      return;
    }
    case Op::CheckerLaunches: {
      const auto all = cusim::checker::launches();
      out.put<std::uint64_t>(all.size());
      for (const auto& l : all) put_launch(out, l);
      return;
    }
    case Op::CheckerClearLaunches:
      cusim::checker::clear_launches();
      return;
    case Op::CheckerInjectFailure: {
      const std::string api = in.get_string();
      const auto nth = in.get<unsigned>();
      const auto error = in.get<cudaError_t>();
      out.put<std::uint8_t>(cusim::checker::inject_failure(api, nth, error) ? 1 : 0);
      return;
    }
    case Op::CheckerEndFailures: {
      const cusim::checker::InjectionOutcome o = cusim::checker::end_injected_failures();
      out.put(o.not_fired).put(o.work_after_failure).put_string(o.first_work_after_failure);
      return;
    }
#endif
    default:
      throw ChannelError("unknown request " + std::to_string(static_cast<unsigned>(op)));
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
    std::uint32_t status = 0;
    try {
      serve_one(op, in, out);
    } catch (const std::exception& e) {
      out = Writer();
      out.put_string(std::string("an exception escaped the lab's code: ") + e.what());
      status = 1;
    } catch (...) {
      out = Writer();
      out.put_string("an exception of unknown type escaped the lab's code");
      status = 1;
    }
    send_message(fd, status, out);
  }
  return 0;
}
