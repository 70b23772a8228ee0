// The worker: the process that holds the student's code. It serves the judge's requests (CUDA
// runtime calls and the lab's interface functions) on the channel fd until the judge closes it.
// Nothing here is trusted: the judge treats every reply as data to check, never as a verdict.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>

#include "crash_report.h"
#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {
namespace {

std::map<std::string, Handler>& registry() {
  static std::map<std::string, Handler> functions;
  return functions;
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
