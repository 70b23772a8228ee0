// The judge's side of the channel of a single-process lab: starts the worker on first use and
// carries the requests to it (judge_request: the CUDA runtime of judge_cuda.cpp and the lab's
// interface functions). The check binary never contains the student's code nor runs a kernel.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "sandbox.h"
#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {

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

// A process the judge sends requests to: the worker (the lab's code, in the sandbox) or the
// checker's own CUDA process (wb_trusted_runtime: no lab code; the timing baselines and the
// calibration of timed runs, judge_timing.cpp).
class Worker {
 public:
  static Worker& get() {
    static Worker worker(false);
    return worker;
  }
  static Worker& trusted() {
    static Worker worker(true);
    return worker;
  }

  Reader request(Op op, const Writer& payload, const char* what, std::uint64_t max_reply = kMaxReply) {
    std::lock_guard<std::mutex> lock(mutex_);
    start();
    if (!gone_.empty()) throw WorkerError(gone_);
    drain_posted();
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
    gone_ = stopped_during(what);
    throw WorkerError(gone_);
  }

  void post(Op op, const Writer& payload, const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    start();
    if (!gone_.empty()) throw WorkerError(gone_);
    if (posted_.size() >= kMaxPosted) drain_posted();
    try {
      send_message(fd_, static_cast<std::uint32_t>(op), payload);
      posted_.push_back(what);
      return;
    } catch (const ChannelError&) {
    }
    gone_ = stopped_during(what);
    throw WorkerError(gone_);
  }

  ~Worker() { stop(); }

 private:
  explicit Worker(bool trusted) : trusted_(trusted) {}

  std::string stopped_during(const char* what) {
    return std::string(trusted_ ? "the checker's own CUDA process (wb_trusted_runtime, timing baselines) "
                                : "the process running the lab's code ") +
           "stopped during " + what + ": " + reap() + ". Nothing after this point could run.";
  }

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
    const std::string self_path = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string("check");
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      gone_ = std::string("cannot create the channel to the lab's process: ") + std::strerror(errno);
      return;
    }
    if (trusted_) {
      // The checker's own code only: no sandbox, next to the check binary. A lab with vendor-library
      // baselines has its own (<check binary>_trusted: the server, the baselines, no lab code).
      std::string exe = self_path + "_trusted";
      if (access(exe.c_str(), X_OK) != 0) exe = self_path.substr(0, self_path.rfind('/') + 1) + "wb_trusted_runtime";
      const Spawned s = spawn_trusted(exe, {"--wb-channel-fd=3"}, fds[1]);
      close(fds[1]);
      fd_ = fds[0];
      pid_ = s.pid;
      if (!s.error.empty()) gone_ = "the checker's own CUDA process could not start: " + s.error;
      return;
    }
    const std::string exe = self_path + "_worker";
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

  // Reads the replies of the posted requests (in order, before any other reply); throws the
  // first failure among them.
  void drain_posted() {
    std::string failure;
    while (!posted_.empty()) {
      const char* what = posted_.front();
      posted_.pop_front();
      std::uint32_t status = 0;
      Payload reply;
      bool got = false;
      try {
        got = receive_message(fd_, status, reply, kMaxReply);
      } catch (const ChannelError&) {
      }
      if (!got) {
        posted_.clear();
        gone_ = stopped_during(what);
        throw WorkerError(gone_);
      }
      Reader r(std::move(reply));
      if (std::string why = posted_failure(what, status, r); !why.empty() && failure.empty()) failure = why;
    }
    if (!failure.empty()) throw WorkerError(failure);
  }

  const bool trusted_;
  std::mutex mutex_;
  std::deque<const char*> posted_;  // requests sent whose replies are not read yet
  bool started_ = false;
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string gone_;
};

}  // namespace

namespace {
// Timings of this process run beside the work they time (judge_timing.cpp).
const bool remote_timing_installed = (install_remote_timing(), true);

// Inside a scope of wb::check::InCheckersProcess (wb_baseline.h; judge_cuda.cpp counts them), the
// requests go to the checker's own process.
Worker& target() { return in_checkers_process() ? Worker::trusted() : Worker::get(); }
}  // namespace

Reader judge_request(Op op, const Writer& w, const char* what, std::uint64_t max_reply) {
  return target().request(op, w, what, max_reply);
}

void judge_post(Op op, const Writer& w, const char* what) { target().post(op, w, what); }

Reader call(const std::string& name, const Writer& arguments) {
  Writer w;
  w.put_string(name);
  w.put_bytes(arguments.bytes().data(), arguments.bytes().size());
  return judge_request(Op::Call, w, (name + "()").c_str(), kMaxReply);
}

}  // namespace wb::remote

