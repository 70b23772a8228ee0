// The judge's side of the collective labs' split (wb_comm_remote.h): this rank's connection to
// its worker, and the requests the lab's interface functions make over it.
#include <mpi.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/status.h"
#include "wb_comm_remote.h"

namespace wb::remote::comm_split {
namespace {

int g_fd = -1;              // the connection to this rank's worker
std::string g_unavailable;  // why there is none (every request fails with it)

// The memory a request's buffers travel in, mapped by the judge and its worker (a sealed
// memfd: the worker can write into it, as into any buffer it is given, but cannot shrink it
// under the judge). The judge reads nothing in it but the buffers' bytes, which it copies out.
struct Shared {
  int fd = -1;
  char* base = nullptr;
  std::size_t bytes = 0;
} g_shared;

// Makes the shared memory hold `bytes` (a new, larger segment goes to the worker first).
// Returns "" or why it could not.
std::string reserve_shared(std::size_t bytes) {
  if (bytes <= g_shared.bytes) return "";
  const std::size_t page = 1 << 16;
  std::size_t size = std::max({bytes, 2 * g_shared.bytes, std::size_t(1) << 20});
  size = (size + page - 1) / page * page;
  const int fd = memfd_create("wb-comm-buffers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return std::string("memfd_create: ") + std::strerror(errno);
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
      (p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    const std::string why = std::string("shared memory of ") + std::to_string(size) + " bytes: " + std::strerror(errno);
    close(fd);
    return why;
  }
  Writer w;
  w.put<std::uint64_t>(size);
  try {
    send_message_with_fd(g_fd, static_cast<std::uint32_t>(Op::SharedMemory), w, fd);
  } catch (const ChannelError&) {
    munmap(p, size);
    close(fd);
    return "ended";
  }
  if (g_shared.base) munmap(g_shared.base, g_shared.bytes);
  if (g_shared.fd >= 0) close(g_shared.fd);
  g_shared = {fd, static_cast<char*>(p), size};
  return "";
}

// The worker is gone or talks nonsense: this check cannot go on, and neither can the other
// ranks' (the worker job has ended with it). Ends the judge job with a message that names the
// call; the launcher fails the running check with it and reruns the checks after it.
[[noreturn]] void lost(const std::string& call, const std::string& why) {
  std::string message = "the process running the lab's code for rank " + std::to_string(env_rank()) + " " + why;
  if (!call.empty()) message += " during " + call + (call.back() == ')' ? "" : "()");
  message +=
      ". The lab's functions must return to the checker: did the code call exit() or MPI_Abort(), crash, or "
      "end MPI (MPI_Finalize)? How that process ended is shown below when it is known.";
  comm::status::set_error(message);
  std::fprintf(stderr, "rank %d: error: %s\n", env_rank(), message.c_str());
  std::fflush(stderr);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, 4);
  std::_Exit(4);
}

// Checks' functions the lab's code is calling back now (Request::run): the lab's functions may
// not be called from them.
int g_in_callback = 0;

// Requests sent by judge_post whose replies are not read yet (in order, before any other reply).
std::deque<const char*> g_posted;

// Reads the replies of the posted requests; throws the first failure among them (the worker
// gone ends the job, as for any request).
void drain_posted() {
  std::string failure;
  while (!g_posted.empty()) {
    const char* what = g_posted.front();
    g_posted.pop_front();
    std::uint32_t status = 0;
    Payload reply;
    try {
      wait_readable_with_mpi_progress(g_fd);
      if (!receive_message(g_fd, status, reply, std::uint64_t(1) << 20)) lost(what, "ended");
    } catch (const ChannelError& e) {
      lost(what, std::string("ended (") + e.what() + ")");
    }
    Reader r(std::move(reply));
    if (std::string why = posted_failure(what, status, r); !why.empty() && failure.empty()) failure = why;
  }
  if (!failure.empty()) throw WorkerError(failure);
}

}  // namespace

namespace detail {
Request*& building() {
  thread_local Request* request = nullptr;
  return request;
}
}  // namespace detail

std::uint32_t add_callback(std::function<void(Reader& args, Writer& result)> f) {
  Request* r = detail::building();
  if (!r) throw std::logic_error("add_callback: only while a request's arguments are written (a Codec's put)");
  return r->callback(std::move(f));
}

void accept_worker() {
  prctl(PR_SET_DUMPABLE, 0);  // no process of this user may ptrace the judge or open its descriptors
  const char* dir = std::getenv("WB_COMM_REMOTE_DIR");
  if (!dir || !*dir) {
    g_unavailable =
        "is not running: this check binary is the checks' half of a split build and needs its worker. Run it "
        "with `./workbook check` or `python3 checker/mpi_launch.py <binary>`, which start both";
    return;
  }
  const std::string path = std::string(dir) + "/rank-" + std::to_string(env_rank()) + ".sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (listener < 0 || path.size() >= sizeof addr.sun_path) {
    g_unavailable = "could not be reached (socket path " + path + ")";
    return;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || chmod(path.c_str(), 0666) != 0 ||
      listen(listener, 1) != 0) {
    g_unavailable = "could not be reached (" + path + ": " + std::strerror(errno) + ")";
    close(listener);
    return;
  }
  double wait_s = 60;
  if (const char* v = std::getenv("WB_COMM_REMOTE_WAIT_S"); v && *v) wait_s = std::atof(v);
  pollfd p{listener, POLLIN, 0};
  int ready;
  while ((ready = poll(&p, 1, static_cast<int>(wait_s * 1000))) < 0 && errno == EINTR) {
  }
  if (ready == 1) g_fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  // One connection per rank: nobody else can take this rank's place afterwards.
  close(listener);
  unlink(path.c_str());
  if (g_fd < 0) {
    g_unavailable = ready == 1 ? "could not be reached (" + std::string(std::strerror(errno)) + ")"
                               : "never started: it did not connect within " + std::to_string(int(wait_s)) + " s";
  }
}

void release_worker() {
  if (g_fd < 0) return;
  try {
    send_message(g_fd, static_cast<std::uint32_t>(Op::Shutdown), Writer{});
  } catch (const ChannelError&) {
  }
  close(g_fd);
  g_fd = -1;
}

Request::Request(const char* name) : name_(name) {}

Request& Request::buffer(const void* p, std::size_t bytes) {
  if (!p) {
    args_.put<std::uint8_t>(0);
    return *this;
  }
  args_.put<std::uint8_t>(1).put<std::uint32_t>(static_cast<std::uint32_t>(regions_.size()));
  regions_.push_back({static_cast<char*>(const_cast<void*>(p)), bytes});
  return *this;
}

Reader Request::run(comm::Communicator& comm) {
  if (g_in_callback > 0)
    throw std::logic_error(std::string("the checks called ") + name_ +
                           "() from a function the lab's code calls back; the lab's functions cannot nest");
  if (g_fd < 0) lost(name_, g_unavailable.empty() ? "is not connected" : g_unavailable);
  drain_posted();
  // The buffers go as blocks: overlapping buffers (in place: the send buffer inside the
  // receive buffer, or the same buffer twice) share one, so the lab's code sees them overlap as
  // the checks laid them out.
  std::vector<std::size_t> order(regions_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return regions_[a].p < regions_[b].p; });
  struct Block {
    char* p;
    std::size_t bytes;
  };
  std::vector<Block> blocks;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> where(regions_.size());  // block, offset
  for (std::size_t i : order) {
    const Region& r = regions_[i];
    // A new block past the last one's end; one at the same address is the same buffer (even empty).
    if (blocks.empty() || (r.p >= blocks.back().p + blocks.back().bytes && r.p != blocks.back().p)) {
      blocks.push_back({r.p, r.bytes});
    } else {
      Block& b = blocks.back();
      b.bytes = std::max(b.bytes, static_cast<std::size_t>(r.p + r.bytes - b.p));
    }
    where[i] = {static_cast<std::uint32_t>(blocks.size() - 1), static_cast<std::uint64_t>(r.p - blocks.back().p)};
  }
  // Each block at a 64-byte aligned place of its own in the shared memory, as the checks'
  // allocations are (an empty buffer too: distinct buffers stay distinct, never null).
  std::vector<std::size_t> at(blocks.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    at[i] = total;
    total += std::max<std::size_t>(64, (blocks[i].bytes + 63) / 64 * 64);
  }
  if (const std::string why = reserve_shared(total); !why.empty())
    lost(name_, "could not be given the buffers (" + why + ")");
  for (std::size_t i = 0; i < blocks.size(); ++i) std::memcpy(g_shared.base + at[i], blocks[i].p, blocks[i].bytes);
  Writer w;
  w.put_string(name_);
  w.put<std::uint8_t>(comm.recording_message_times() ? 1 : 0);
  w.put<std::uint64_t>(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) w.put<std::uint64_t>(at[i]).put<std::uint64_t>(blocks[i].bytes);
  w.put<std::uint64_t>(regions_.size());
  for (std::size_t i = 0; i < regions_.size(); ++i)
    w.put<std::uint32_t>(where[i].first).put<std::uint64_t>(where[i].second).put<std::uint64_t>(regions_[i].bytes);
  w.put_bulk(args_.bytes().data(), args_.bytes().size());
  comm::status::set_activity("waiting for the lab's code: %s()", name_);
  std::uint32_t tag = 0;
  Payload payload;
  std::exception_ptr thrown;  // by a function of the checks the lab's code called back
  const double sent_at = stats_enabled() ? MPI_Wtime() : 0;
  try {
    send_message(g_fd, static_cast<std::uint32_t>(Op::Call), w);
    for (;;) {
      wait_readable_with_mpi_progress(g_fd);  // the judges' own MPI traffic keeps moving meanwhile
      // The reply holds a few counters, message times and the function's value: no more.
      if (!receive_message(g_fd, tag, payload, std::uint64_t(256) << 20)) lost(name_, "ended");
      if (tag != static_cast<std::uint32_t>(Op::Callback)) break;
      Reader in(std::move(payload));
      const auto id = in.get<std::uint32_t>();
      if (id == 0 || id > callbacks_.size()) lost(name_, "sent a malformed reply (a call of a function never passed)");
      Writer result;
      std::uint8_t ok = 1;
      ++g_in_callback;
      try {
        callbacks_[id - 1](in, result);
        drain_posted();  // their replies come before the rest of the call's
      } catch (...) {
        if (!thrown) thrown = std::current_exception();
        ok = 0;
        result = Writer();
      }
      --g_in_callback;
      Writer back;
      back.put(ok).put_bytes(result.bytes().data(), result.bytes().size());
      send_message(g_fd, static_cast<std::uint32_t>(Op::CallbackReturn), back);
    }
  } catch (const ChannelError& e) {
    lost(name_, std::string("ended (") + e.what() + ")");
  }
  if (stats_enabled()) stats_note_time(StatsTime::judge_waiting, MPI_Wtime() - sent_at);
  comm::status::set_running();
  Reader r(std::move(payload));
  std::uint8_t outcome = 0;
  std::string text, function;
  try {
    outcome = r.get<std::uint8_t>();
    text = r.get_string();
    function = r.get_string();
    const auto ncalls = r.get<std::uint64_t>();
    if (ncalls > 4096) throw ChannelError("too many calls");
    std::vector<std::pair<std::string, std::uint64_t>> calls;
    for (std::uint64_t i = 0; i < ncalls; ++i) {
      std::string what = r.get_string();
      calls.emplace_back(std::move(what), r.get<std::uint64_t>());
    }
    const comm::Stats delta = r.get<comm::Stats>();
    const auto ntimes = r.get<std::uint64_t>();
    if (ntimes > r.remaining() / sizeof(comm::MessageTime)) throw ChannelError("too many message times");
    std::vector<comm::MessageTime> times(ntimes);
    std::memcpy(times.data(), r.take(ntimes * sizeof(comm::MessageTime)), ntimes * sizeof(comm::MessageTime));
    for (std::size_t i = 0; i < blocks.size(); ++i) std::memcpy(blocks[i].p, g_shared.base + at[i], blocks[i].bytes);
    comm::check::note_remote_calls(calls);
    comm.absorb(delta, times);
  } catch (const ChannelError& e) {
    lost(name_, std::string("sent a malformed reply (") + e.what() + ")");
  }
  if (outcome == 1 || outcome == 2) {
    // Rebuilt as the lab's code threw it: "<file>:<line>: <what>" (comm/error.h).
    std::string file, what = text;
    int line = 0;
    for (std::size_t colon = text.find(':'); colon != std::string::npos; colon = text.find(':', colon + 1)) {
      std::size_t end = colon + 1;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      if (end > colon + 1 && text.compare(end, 2, ": ") == 0) {
        file = text.substr(0, colon);
        line = std::atoi(text.c_str() + colon + 1);
        what = text.substr(end + 2);
        break;
      }
    }
    if (outcome == 1) throw comm::NotImplemented(file.c_str(), line, function);
    throw comm::Error(file.c_str(), line, what);
  }
  if (outcome != 0) throw std::runtime_error(text);
  if (thrown) std::rethrow_exception(thrown);
  return r;
}

// The CUDA runtime's requests (judge_cuda.cpp) of a lab whose code is CUDA, over the same
// connection: device memory lives in the worker.
Reader cuda_request(Op op, const Writer& payload, const char* what, std::uint64_t max_reply) {
  if (g_fd < 0) {
    throw WorkerError(std::string(what) + ": the process running the lab's code " +
                      (g_unavailable.empty() ? "is not connected" : g_unavailable));
  }
  drain_posted();
  std::uint32_t status = 0;
  Payload reply;
  try {
    send_message(g_fd, static_cast<std::uint32_t>(op), payload);
    wait_readable_with_mpi_progress(g_fd);
    if (!receive_message(g_fd, status, reply, max_reply)) lost(what, "ended");
  } catch (const ChannelError& e) {
    lost(what, std::string("ended (") + e.what() + ")");
  }
  Reader r(std::move(reply));
  if (status == 0) return r;
  std::string message;
  try {
    message = r.get_string();
  } catch (const ChannelError&) {
    lost(what, "sent a malformed reply");
  }
  throw WorkerError(std::string(what) + ": " + message);
}

void cuda_post(Op op, const Writer& payload, const char* what) {
  if (g_fd < 0) {
    throw WorkerError(std::string(what) + ": the process running the lab's code " +
                      (g_unavailable.empty() ? "is not connected" : g_unavailable));
  }
  if (g_posted.size() >= kMaxPosted) drain_posted();
  try {
    send_message(g_fd, static_cast<std::uint32_t>(op), payload);
  } catch (const ChannelError& e) {
    lost(what, std::string("ended (") + e.what() + ")");
  }
  g_posted.push_back(what);
}

}  // namespace wb::remote::comm_split

namespace wb::remote {
Reader judge_request(Op op, const Writer& payload, const char* what, std::uint64_t max_reply) {
  return comm_split::cuda_request(op, payload, what, max_reply);
}
void judge_post(Op op, const Writer& payload, const char* what) { comm_split::cuda_post(op, payload, what); }
}  // namespace wb::remote
