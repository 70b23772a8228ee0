// The worker of the collective labs' split (wb_comm_remote.h): main() of check_NN_name_worker.
// It joins the workers' MPI job, connects to this rank's judge and runs the lab's functions
// the judge asks for, over this process's own communicator.
#include <mpi.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "comm/check.h"
#include "comm/error.h"
#include "comm/mpi_communicator.h"
#include "comm/status.h"
#include "wb_comm_remote.h"

namespace wb::remote::comm_split {
namespace {

std::map<std::string, Handler>& handlers() {
  static std::map<std::string, Handler> h;
  return h;
}

// Connects to this rank's judge; it may still be starting.
int connect_judge(int rank) {
  const char* dir = std::getenv("WB_COMM_REMOTE_DIR");
  if (!dir || !*dir) {
    std::fprintf(stderr,
                 "check worker: WB_COMM_REMOTE_DIR is not set. This program runs the lab's code for the checks "
                 "and is started by `./workbook check` (checker/mpi_launch.py), not by hand.\n");
    return -1;
  }
  const std::string path = std::string(dir) + "/rank-" + std::to_string(rank) + ".sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "check worker: rank %d could not reach its judge at %s\n", rank, path.c_str());
  return -1;
}

int g_fd = -1;  // the connection to this rank's judge
void (*g_cuda_server)(Op, Reader&, Writer&) = nullptr;  // set_cuda_server
std::mutex g_callback_mutex;

// One CUDA runtime request of the judge (judge_cuda.cpp), answered as the single-process
// worker answers it.
void serve_cuda_request(int fd, Op op, Payload payload) {
  Reader in(std::move(payload));
  Writer out;
  const std::uint32_t status = serve_reporting_exceptions(
      [&] {
        if (!g_cuda_server) throw std::runtime_error("this lab's worker has no CUDA runtime");
        g_cuda_server(op, in, out);
      },
      out);
  send_message(fd, status, out);
}

// This worker's mapping of the memory the judge shares the requests' buffers in.
struct Shared {
  char* base = nullptr;
  std::size_t bytes = 0;
} g_shared;

// Maps a new shared segment from the judge (Op::SharedMemory) in place of the old one.
void map_shared(Reader& in, int fd) {
  const auto size = in.get<std::uint64_t>();
  struct stat st{};
  if (fd < 0 || fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != size)
    throw ChannelError("the shared memory for the buffers did not arrive");
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throw ChannelError(std::string("could not map the shared memory: ") + std::strerror(errno));
  if (g_shared.base) munmap(g_shared.base, g_shared.bytes);
  g_shared = {static_cast<char*>(p), size};
}

// One request: runs the handler inside a LearnerCall window with fresh counters, and replies
// with what the judge needs to see it as if the call had run there.
void serve(Reader& in, comm::Communicator& comm, int fd) {
  const std::string name = in.get_string();
  const bool record_times = in.get<std::uint8_t>() != 0;
  Args args(in, g_shared.base, g_shared.bytes);
  Writer result;
  std::uint8_t outcome = 0;
  std::string text, function;
  const comm::Stats before = comm.stats();
  comm.reset_stats();
  comm.record_message_times(record_times);
  std::vector<std::pair<std::string, std::uint64_t>> calls;
  {
    comm::check::LearnerCall window(name);
    const auto h = handlers().find(name);
    const double started = stats_enabled() ? MPI_Wtime() : 0;
    try {
      if (h == handlers().end()) throw std::runtime_error("the worker has no function " + name);
      h->second(args, result, comm);
    } catch (const comm::NotImplemented& e) {
      outcome = 1;
      text = e.what();
      function = e.function();
    } catch (const comm::Error& e) {
      outcome = 2;
      text = e.what();
    } catch (const std::exception& e) {
      outcome = 3;
      text = e.what();
    }
    if (stats_enabled()) stats_note_time(StatsTime::worker_running, MPI_Wtime() - started);
    calls = window.close_calls();
  }
  comm.record_message_times(false);
  comm::Stats delta = comm.stats();
  delta.pending_recvs -= before.pending_recvs;
  delta.pending_sends -= before.pending_sends;
  delta.max_pending_recvs -= before.pending_recvs;
  delta.max_pending_sends -= before.pending_sends;

  Writer reply;
  reply.put<std::uint8_t>(outcome).put_string(text).put_string(function);
  reply.put<std::uint64_t>(calls.size());
  for (const auto& [what, count] : calls) reply.put_string(what).put<std::uint64_t>(count);
  reply.put(delta);
  const auto& times = comm.message_times();
  reply.put<std::uint64_t>(times.size());
  reply.put_bytes(times.data(), times.size() * sizeof(comm::MessageTime));
  reply.put_bytes(result.bytes().data(), result.bytes().size());
  send_message(fd, 0, reply);
}

}  // namespace

void register_handler(const char* name, Handler handler) { handlers()[name] = std::move(handler); }

void set_cuda_server(void (*server)(Op, Reader&, Writer&)) { g_cuda_server = server; }

Reader call_back(std::uint32_t id, const Writer& args) {
  std::lock_guard<std::mutex> lock(g_callback_mutex);
  Writer w;
  w.put(id).put_bytes(args.bytes().data(), args.bytes().size());
  send_message(g_fd, static_cast<std::uint32_t>(Op::Callback), w);
  for (;;) {
    std::uint32_t tag = 0;
    Payload payload;
    int passed = -1;
    wait_readable_with_mpi_progress(g_fd);
    // The judge is gone: nothing this process does matters any more.
    if (!receive_message_with_fd(g_fd, tag, payload, &passed)) std::_Exit(3);
    if (passed >= 0) close(passed);
    if (tag == static_cast<std::uint32_t>(Op::CallbackReturn)) {
      Reader r(std::move(payload));
      if (r.get<std::uint8_t>() == 0) throw std::runtime_error("the checker's function called by the lab's code failed");
      return r;
    }
    if (tag == static_cast<std::uint32_t>(Op::Shutdown)) std::_Exit(3);
    if (!is_cuda_op(tag)) throw ChannelError("unexpected request " + std::to_string(tag) + " during a call back");
    serve_cuda_request(g_fd, static_cast<Op>(tag), std::move(payload));
  }
}

Args::Args(Reader& in, char* shared, std::size_t shared_bytes) : in_(in) {
  const auto nblocks = in_.get<std::uint64_t>();
  if (nblocks > 4096) throw ChannelError("malformed request: too many buffers");
  for (std::uint64_t i = 0; i < nblocks; ++i) {
    const auto offset = in_.get<std::uint64_t>();
    const auto bytes = in_.get<std::uint64_t>();
    if (offset > shared_bytes || bytes > shared_bytes - offset)
      throw ChannelError("malformed request: a buffer outside the shared memory");
    blocks_.push_back({shared + offset, bytes});
  }
  const auto nbuffers = in_.get<std::uint64_t>();
  if (nbuffers > 4096) throw ChannelError("malformed request: too many buffers");
  for (std::uint64_t i = 0; i < nbuffers; ++i) {
    const auto block = in_.get<std::uint32_t>();
    const auto offset = in_.get<std::uint64_t>();
    const auto bytes = in_.get<std::uint64_t>();
    if (block >= blocks_.size() || offset > blocks_[block].bytes || bytes > blocks_[block].bytes - offset)
      throw ChannelError("malformed request: a buffer outside its block");
    buffers_.push_back(blocks_[block].data + offset);
  }
}

void* Args::buffer() {
  const auto kind = in_.get<std::uint8_t>();
  if (kind == 0) return nullptr;
  const auto index = in_.get<std::uint32_t>();
  if (kind != 1 || index >= buffers_.size()) throw ChannelError("malformed request: buffer");
  return buffers_[index];
}

}  // namespace wb::remote::comm_split

int main(int argc, char** argv) {
  using namespace wb::remote;
  const int rank = comm_split::env_rank();
  const int fd = comm_split::connect_judge(rank);
  if (fd < 0) return 2;
  comm_split::g_fd = fd;
  comm::MpiSession session(&argc, &argv);
  std::unique_ptr<comm::Communicator> world = comm::make_mpi_communicator(MPI_COMM_WORLD, comm::default_memory_space());
  comm::status::set_ready();  // started: a judge waiting for this worker is no longer "starting"
  for (;;) {
    std::uint32_t tag = 0;
    Payload payload;
    const double idle_since = stats_enabled() ? MPI_Wtime() : 0;
    comm_split::wait_readable_with_mpi_progress(fd);  // between requests, MPI keeps moving
    if (stats_enabled()) stats_note_time(StatsTime::worker_idle, MPI_Wtime() - idle_since);
    try {
      int passed = -1;
      if (!receive_message_with_fd(fd, tag, payload, &passed)) break;  // the judge is gone
      if (tag == static_cast<std::uint32_t>(Op::SharedMemory)) {
        Reader in(std::move(payload));
        comm_split::map_shared(in, passed);
        continue;
      }
      if (passed >= 0) close(passed);
      if (tag == static_cast<std::uint32_t>(Op::Shutdown)) {
        world.reset();
        comm::status::set_done();
        return 0;
      }
      if (is_cuda_op(tag)) {
        comm_split::serve_cuda_request(fd, static_cast<Op>(tag), std::move(payload));
        continue;
      }
      if (tag != static_cast<std::uint32_t>(Op::Call)) break;
      Reader in(std::move(payload));
      comm_split::serve(in, *world, fd);
    } catch (const ChannelError& e) {
      std::fprintf(stderr, "check worker (rank %d): %s\n", rank, e.what());
      break;
    }
  }
  // The judge ended without a goodbye (its job was stopped): leave at once, without MPI's
  // collective finalize, which would wait for the other workers.
  std::_Exit(3);
}
