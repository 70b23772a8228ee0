// The worker: the process that holds the student's code. It serves the judge's requests (CUDA
// runtime calls and the lab's interface functions) on the channel fd until the judge closes it.
// Nothing here is trusted: the judge treats every reply as data to check, never as a verdict.
#include <cuda_runtime.h>
#include <dirent.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#if defined(CUSIM)
#include "cusim/checker.h"
#endif

#include "crash_report.h"
#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {
namespace {

std::map<std::string, Handler>& registry() {
  static std::map<std::string, Handler> functions;
  return functions;
}

// ---- Work left running when a lab function returns ------------------------------------------
// A function whose outputs are written after it returns (by a thread it started, a timer's
// signal handler, or a stream that nothing waits for) gets the right answer on sim, where the
// judge's next request comes later, and on a GPU escapes the timing and can be read unfinished
// (the leaderboards' "lazy output" exploits). The worker compares what runs before and after each
// call; the judge fails the call with what was left (docs/concepts/checking.md).

std::set<long> live_threads() {
  std::set<long> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') tids.insert(std::strtol(e->d_name, nullptr, 10));
    }
    closedir(d);
  }
  return tids;
}

struct Timers {
  bool armed[3] = {false, false, false};  // ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF
  int posix = 0;                          // timer_create timers (/proc/self/timers)
};

Timers timers() {
  Timers t;
  const int which[3] = {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF};
  for (int i = 0; i < 3; ++i) {
    itimerval v{};
    t.armed[i] = getitimer(which[i], &v) == 0 && (v.it_value.tv_sec != 0 || v.it_value.tv_usec != 0);
  }
  std::ifstream f("/proc/self/timers");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("ID:", 0) == 0) ++t.posix;
  }
  return t;
}

struct Running {
  std::set<long> threads;
  Timers timers;
};

Running running() {
#if defined(CUSIM)
  cusim::checker::clear_unsynchronized_work();
#endif
  return {live_threads(), timers()};
}

// What the function left running, compared with @p before; "" when nothing.
std::string left_running(const Running& before) {
  std::vector<std::string> found;
#if defined(CUSIM)
  // Threads: on sim, every thread but cusim's own is the lab's. On a GPU the CUDA driver starts
  // threads of its own when it needs them, which this cannot tell from the lab's: there work left on
  // another stream or thread is what wb::time_median's busy-after-stop test catches.
  const std::vector<long> own_list = cusim::checker::own_threads();
  const std::set<long> own(own_list.begin(), own_list.end());
  int threads = 0;
  for (long tid : live_threads()) threads += !before.threads.count(tid) && !own.count(tid);
  if (threads) {
    found.push_back(std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
                    " it started, still running (join every thread before returning)");
  }
#endif
  const Timers after = timers();
  const char* names[3] = {"ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"};
  for (int i = 0; i < 3; ++i) {
    if (after.armed[i] && !before.timers.armed[i])
      found.push_back(std::string("a timer it armed (setitimer ") + names[i] + "), whose signal would run code later");
  }
  if (after.posix > before.timers.posix)
    found.push_back("a timer it created (timer_create), whose expiry would run code later");
#if defined(CUSIM)
  for (const cusim::checker::UnsynchronizedWork& w : cusim::checker::unsynchronized_work()) {
    found.push_back("work on a stream created with cudaStreamNonBlocking that nothing waited for: " + w.what +
                    (w.site.empty() ? "" : " at " + w.site) +
                    (w.operations > 1 ? " (and " + std::to_string(w.operations - 1) + " more operations)" : "") +
                    "; on a GPU it runs on after the return, unordered with the default stream the checker "
                    "times and reads results on (use the stream you were given, or synchronize before "
                    "returning)");
  }
  cusim::checker::clear_unsynchronized_work();
#endif
  if (found.empty()) return "";
  std::string text = "returned while work it started was still running: ";
  for (std::size_t i = 0; i < found.size(); ++i) text += (i ? "; " : "") + found[i];
  return text + ". A lab function must finish its work before it returns: work that runs on after it "
                "(outputs written later) escapes a GPU timing and can be read unfinished.";
}

void serve_request(Op op, Reader& in, Writer& out) {
  switch (op) {
    case Op::Call: {
      const std::string name = in.get_string();
      auto it = registry().find(name);
      if (it == registry().end()) throw ChannelError("the worker has no function " + name);
      const Running before = running();
      it->second(in, out);
      if (const std::string left = left_running(before); !left.empty()) throw Finding(left);
      return;
    }
    default:
      if (!is_cuda_op(static_cast<std::uint32_t>(op)))
        throw ChannelError("unknown request " + std::to_string(static_cast<unsigned>(op)));
      serve_cuda(op, in, out);
      return;
  }
}

// Serves one request inside the timed region of a repetition when one is open (worker_cuda.cpp).
void serve_one(Op op, Reader& in, Writer& out) {
  region_before_request(op);
  try {
    serve_request(op, in, out);
  } catch (...) {
    region_after_request(op);
    throw;
  }
  region_after_request(op);
}

// A function of no lab, in every worker: a timed run without work in the checker's own process
// (judge_timing.cpp) calls it, so that what it measures passes through the same server as a call
// of the lab's code.
const Registration noop_registration{"wb.noop", [](Reader&, Writer&) {}};

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
  // A crash of the lab's host code: its backtrace goes to stderr, for the runner to resolve
  // into file:line (checker/symbolize.py).
  wb::crash_report::install();
  std::uint32_t tag = 0;
  Payload payload;
  try {
    while (receive_message(fd, tag, payload)) {
      const Op op = static_cast<Op>(tag);
      if (op == Op::Shutdown) break;
      Reader in(std::move(payload));
      Writer out;
      const std::uint32_t status = serve_reporting_exceptions([&] { serve_one(op, in, out); }, out);
      send_message(fd, status, out);
    }
  } catch (const ChannelError&) {
    // The judge has gone: it finished its check without reading the replies to the calls it
    // posted last (judge_post), or it was stopped. Nothing is left to answer, and this is no crash
    // of the lab's code (an uncaught exception here was reported as one, at channel.cpp).
  }
  return 0;
}
