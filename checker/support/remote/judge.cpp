// The judge's side of the channel: starts the worker on first use and implements, as requests
// to it, every CUDA runtime function the checks and common/wb call (and cusim's analysis and
// checker APIs on sim). This file replaces the CUDA runtime (cusim or libcudart) in a check
// binary: the check binary never contains the student's code nor runs a kernel itself.
#define CUSIM_NO_SITE_MACROS 1
#include <cuda_runtime.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(CUSIM)
#include "wb_remote_analysis.h"
#endif
#include "sandbox.h"
#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {

/// The worker (the student's code) is gone; what() says how, for the learner.
class WorkerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace {

/// The largest reply the judge accepts, but for copies to the host (their size is known).
constexpr std::uint64_t kMaxReply = std::uint64_t(64) << 20;

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    return "it exited with status " + std::to_string(WEXITSTATUS(status)) +
           " (the lab's code called exit() or returned from a destructor path; a lab function must return "
           "to its caller)";
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string text = "it was killed by signal " + std::to_string(sig);
    if (const char* name = sigabbrev_np(sig)) text = std::string("it crashed with SIG") + name;
    switch (sig) {
      case SIGSEGV: text += " (an invalid memory access)"; break;
      case SIGBUS: text += " (an invalid or misaligned memory access)"; break;
      case SIGABRT: text += " (abort() or a failed assert())"; break;
      case SIGFPE: text += " (an arithmetic exception, e.g. integer division by zero)"; break;
      case SIGKILL: text += " (killed: out of memory, or a resource limit)"; break;
      case SIGXFSZ: text += " (it wrote a file larger than the sandbox allows)"; break;
      case SIGXCPU: text += " (it used more CPU time than the sandbox allows)"; break;
      default: break;
    }
    return text;
  }
  return "it ended";
}

class Worker {
 public:
  static Worker& get() {
    static Worker worker;
    return worker;
  }

  Reader request(Op op, const Writer& payload, const char* what, std::uint64_t max_reply = kMaxReply) {
    std::lock_guard<std::mutex> lock(mutex_);
    start();
    if (!gone_.empty()) throw WorkerError(gone_);
    std::uint32_t status = 0;
    Payload reply;
    try {
      send_message(fd_, static_cast<std::uint32_t>(op), payload);
      if (receive_message(fd_, status, reply, max_reply)) {
        Reader r(std::move(reply));
        if (status == 0) return r;
        const std::string message = r.get_string();
        throw WorkerError(std::string(what) + ": " + message);
      }
    } catch (const ChannelError&) {
    }
    gone_ = "the process running the lab's code stopped during " + std::string(what) + ": " + reap() +
            ". Nothing after this point could run.";
    throw WorkerError(gone_);
  }

  ~Worker() { stop(); }

 private:
  void start() {
    if (started_) return;
    started_ = true;
    // The worker may run as this user: it must not be able to read this process's memory or
    // descriptors (ptrace, /proc/PID/fd, /proc/PID/mem).
    prctl(PR_SET_DUMPABLE, 0);
    // A worker that dies mid-message must not kill the judge: writes then fail with EPIPE.
    signal(SIGPIPE, SIG_IGN);
    char self[PATH_MAX] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    const std::string exe = (n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string("check")) + "_worker";
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      gone_ = std::string("cannot create the channel to the lab's process: ") + std::strerror(errno);
      return;
    }
    const Spawned s = spawn_worker(exe, {"--wb-channel-fd=3"}, fds[1]);
    close(fds[1]);
    fd_ = fds[0];
    pid_ = s.pid;
    if (!s.error.empty()) {
      gone_ = "the process for the lab's code could not start: " + s.error;
      return;
    }
    const std::string missing = missing_protections(s.protections);
    if (const char* report = std::getenv("WB_SANDBOX_REPORT"); report && *report) {
      std::fprintf(stderr, "[wb sandbox] %s%s%s\n", describe_protections(s.protections).c_str(),
                   missing.empty() ? "" : "; not available: ", missing.c_str());
    }
  }

  std::string reap() {
    if (pid_ <= 0) return "it never started";
    int status = 0;
    // The worker closed its end; give it a moment to finish dying before asking how.
    for (int i = 0; i < 200; ++i) {
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return describe_status(status);
      }
      if (r < 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    end_worker();
    return "it closed the channel to the checker (the lab's code closed or broke file descriptor 3)";
  }

  void stop() {
    if (fd_ >= 0) {
      try {
        send_message(fd_, static_cast<std::uint32_t>(Op::Shutdown), Writer());
      } catch (const ChannelError&) {
      }
      close(fd_);
      fd_ = -1;
    }
    if (pid_ > 0) {
      // Destructors and atexit handlers of the lab's code get a moment, then the process goes:
      // nothing it does any more can change a verdict.
      int status = 0;
      for (int i = 0; i < 50 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      end_worker();
    }
  }

  // SIGTERM makes the outer child kill the worker (sandbox.cpp); SIGKILL if it does not end.
  void end_worker() {
    int status = 0;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  std::mutex mutex_;
  bool started_ = false;
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string gone_;
};

Reader request(Op op, const Writer& w, const char* what, std::uint64_t max_reply = kMaxReply) {
  return Worker::get().request(op, w, what, max_reply);
}

// Releases after the worker is gone (a DeviceBuffer's destructor after a failed check) do
// nothing, quietly: a destructor must not throw, and the failure was already reported.
cudaError_t release(Op op, const Writer& w, const char* what) {
  try {
    return request(op, w, what).get<cudaError_t>();
  } catch (const WorkerError&) {
    return cudaErrorUnknown;
  }
}

Writer args() { return Writer(); }

cudaError_t status_only(Op op, const Writer& w, const char* what) { return request(op, w, what).get<cudaError_t>(); }

// Device allocations as the worker reported them: cudaMemcpyDefault needs to tell device
// pointers from host pointers.
std::map<std::uint64_t, std::uint64_t>& device_ranges() {
  static std::map<std::uint64_t, std::uint64_t> ranges;
  return ranges;
}

bool is_device(const void* p) {
  const auto v = to_wire(p);
  auto it = device_ranges().upper_bound(v);
  if (it == device_ranges().begin()) return false;
  --it;
  return v >= it->first && v < it->first + it->second;
}

const char* cached_text(Op op, cudaError_t code) {
  static std::map<std::pair<int, int>, std::string> cache;
  const auto key = std::make_pair(static_cast<int>(op), static_cast<int>(code));
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::string text;
    try {
      Writer w;
      w.put(code);
      text = request(op, w, "cudaGetErrorString").get_string();
    } catch (const std::exception&) {
      text = "cuda error " + std::to_string(static_cast<int>(code));
    }
    it = cache.emplace(key, text).first;
  }
  return it->second.c_str();
}

}  // namespace

Reader call(const std::string& name, const Writer& arguments) {
  Writer w;
  w.put_string(name);
  w.put_bytes(arguments.bytes().data(), arguments.bytes().size());
  return request(Op::Call, w, (name + "()").c_str());
}

}  // namespace wb::remote

using namespace wb::remote;

#if defined(CUSIM)
namespace cusim::detail {
void set_api_site(const char*, int) noexcept {}
}  // namespace cusim::detail
#endif

const char* cudaGetErrorString(cudaError_t error) { return cached_text(Op::ErrorString, error); }
const char* cudaGetErrorName(cudaError_t error) { return cached_text(Op::ErrorName, error); }
cudaError_t cudaGetLastError() { return status_only(Op::GetLastError, args(), "cudaGetLastError"); }
cudaError_t cudaPeekAtLastError() { return status_only(Op::PeekAtLastError, args(), "cudaPeekAtLastError"); }
cudaError_t cudaDeviceSynchronize() { return status_only(Op::Synchronize, args(), "cudaDeviceSynchronize"); }

cudaError_t cudaGetDevice(int* device) {
  Reader r = request(Op::GetDevice, args(), "cudaGetDevice");
  const auto e = r.get<cudaError_t>();
  *device = r.get<int>();
  return e;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  Writer w;
  w.put(attr).put(device);
  Reader r = request(Op::DeviceGetAttribute, w, "cudaDeviceGetAttribute");
  const auto e = r.get<cudaError_t>();
  *value = r.get<int>();
  return e;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  Writer w;
  w.put(device);
  Reader r = request(Op::GetDeviceProperties, w, "cudaGetDeviceProperties");
  const auto e = r.get<cudaError_t>();
  *prop = r.get<cudaDeviceProp>();
  return e;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  Writer w;
  w.put<std::uint64_t>(size);
  Reader r = request(Op::Malloc, w, "cudaMalloc");
  const auto e = r.get<cudaError_t>();
  const auto p = r.get<std::uint64_t>();
  *ptr = from_wire<void*>(p);
  if (e == cudaSuccess && p != 0) device_ranges()[p] = size;
  return e;
}

cudaError_t cudaFree(void* ptr) {
  Writer w;
  w.put<std::uint64_t>(to_wire(ptr));
  device_ranges().erase(to_wire(ptr));
  return release(Op::Free, w, "cudaFree");
}

namespace {

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind == cudaMemcpyDefault) {
    const bool d = is_device(dst), s = is_device(src);
    kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (count) std::memmove(dst, src, count);
      return cudaSuccess;
    case cudaMemcpyHostToDevice: {
      Writer w;
      w.put<std::uint64_t>(to_wire(dst)).put<std::uint64_t>(count).put_bulk(src, count);
      return status_only(Op::MemcpyToDevice, w, "cudaMemcpy (host to device)");
    }
    case cudaMemcpyDeviceToHost: {
      Writer w;
      w.put<std::uint64_t>(to_wire(src)).put<std::uint64_t>(count);
      Reader r = request(Op::MemcpyToHost, w, "cudaMemcpy (device to host)", count + 64);
      const auto e = r.get<cudaError_t>();
      if (count) std::memcpy(dst, r.take(count), count);
      return e;
    }
    case cudaMemcpyDeviceToDevice: {
      Writer w;
      w.put<std::uint64_t>(to_wire(dst)).put<std::uint64_t>(to_wire(src)).put<std::uint64_t>(count);
      w.put<std::uint64_t>(to_wire(stream));
      return status_only(Op::MemcpyDeviceToDevice, w, "cudaMemcpy (device to device)");
    }
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy(dst, src, count, kind, stream);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(ptr)).put(value).put<std::uint64_t>(count).put<std::uint64_t>(to_wire(stream));
  return status_only(Op::Memset, w, "cudaMemset");
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) { return cudaMemsetAsync(ptr, value, count, nullptr); }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  Reader r = request(Op::StreamCreate, args(), "cudaStreamCreate");
  const auto e = r.get<cudaError_t>();
  *stream = from_wire<cudaStream_t>(r.get<std::uint64_t>());
  return e;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(stream));
  return release(Op::StreamDestroy, w, "cudaStreamDestroy");
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(stream));
  return status_only(Op::StreamSynchronize, w, "cudaStreamSynchronize");
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  Reader r = request(Op::EventCreate, args(), "cudaEventCreate");
  const auto e = r.get<cudaError_t>();
  *event = from_wire<cudaEvent_t>(r.get<std::uint64_t>());
  return e;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event));
  return release(Op::EventDestroy, w, "cudaEventDestroy");
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event)).put<std::uint64_t>(to_wire(stream));
  return status_only(Op::EventRecord, w, "cudaEventRecord");
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event));
  return status_only(Op::EventSynchronize, w, "cudaEventSynchronize");
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  Writer w;
  w.put<std::uint64_t>(to_wire(start)).put<std::uint64_t>(to_wire(end));
  Reader r = request(Op::EventElapsedTime, w, "cudaEventElapsedTime");
  const auto e = r.get<cudaError_t>();
  *ms = r.get<float>();
  return e;
}

#if defined(CUSIM)
// What cusim's analysis saw in the worker. These numbers come from the student's process: they
// are as trustworthy as that process (see docs/concepts/checking.md).
namespace cusim::analysis {

bool available() { return request(Op::AnalysisAvailable, args(), "cusim::analysis::available").get<std::uint8_t>() != 0; }

void reset() { request(Op::AnalysisReset, args(), "cusim::analysis::reset"); }

std::vector<KernelMetrics> metrics() {
  Reader r = request(Op::AnalysisMetrics, args(), "cusim::analysis::metrics");
  const auto n = r.get<std::uint64_t>();
  std::vector<KernelMetrics> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_metrics(r));
  return out;
}

std::vector<Report> reports() {
  Reader r = request(Op::AnalysisReports, args(), "cusim::analysis::reports");
  const auto n = r.get<std::uint64_t>();
  std::vector<Report> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_report(r));
  return out;
}

}  // namespace cusim::analysis

// cusim/checker.h, asked of the worker's cusim (the same caveat: these are the worker's answers).
namespace cusim::checker {

DeviceMemory device_memory() {
  Reader r = request(Op::CheckerDeviceMemory, args(), "cusim::checker::device_memory");
  DeviceMemory m;
  m.allocations = r.get<std::uint64_t>();
  m.bytes = r.get<std::uint64_t>();
  return m;
}

std::vector<LaunchRecord> launches() {
  Reader r = request(Op::CheckerLaunches, args(), "cusim::checker::launches");
  const auto n = r.get<std::uint64_t>();
  std::vector<LaunchRecord> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_launch(r));
  return out;
}

void clear_launches() { request(Op::CheckerClearLaunches, args(), "cusim::checker::clear_launches"); }

bool inject_failure(const std::string& api, unsigned nth, cudaError_t error) {
  Writer w;
  w.put_string(api).put(nth).put(error);
  return request(Op::CheckerInjectFailure, w, "cusim::checker::inject_failure").get<std::uint8_t>() != 0;
}

InjectionOutcome end_injected_failures() {
  Reader r = request(Op::CheckerEndFailures, args(), "cusim::checker::end_injected_failures");
  InjectionOutcome o;
  o.not_fired = r.get<unsigned>();
  o.work_after_failure = r.get<std::uint64_t>();
  o.first_work_after_failure = r.get_string();
  return o;
}

}  // namespace cusim::checker
#endif
