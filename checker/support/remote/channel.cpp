#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "wb_remote.h"

namespace wb::remote {
namespace {

// WB_REMOTE_STATS=1: at exit, the messages this process sent by kind and their bytes (what the
// split costs in round trips; docs/perf/check-isolation.md) and, in the collective labs' split,
// the seconds the judge waited for its worker's replies, the worker ran the lab's code, and the
// worker waited for requests: waiting minus running is what the round trips cost.
struct SendStats {
  std::mutex mutex;
  std::uint64_t count[64] = {};
  std::uint64_t bytes[64] = {};
  double seconds[4] = {};  // by StatsTime
  std::uint64_t timed[4] = {};
  bool enabled = std::getenv("WB_REMOTE_STATS") != nullptr;
  void note(std::uint32_t tag, std::uint64_t n) {
    if (!enabled) return;
    std::lock_guard<std::mutex> lock(mutex);
    count[tag < 64 ? tag : 63] += 1;
    bytes[tag < 64 ? tag : 63] += n;
  }
  ~SendStats() {
    if (!enabled) return;
    std::uint64_t total = 0, total_bytes = 0;
    for (int t = 0; t < 64; ++t) total += count[t], total_bytes += bytes[t];
    std::fprintf(stderr, "wb remote stats (pid %d): %llu messages sent, %llu bytes; by tag:", static_cast<int>(getpid()),
                 static_cast<unsigned long long>(total), static_cast<unsigned long long>(total_bytes));
    for (int t = 0; t < 64; ++t)
      if (count[t]) std::fprintf(stderr, " %d:%llu", t, static_cast<unsigned long long>(count[t]));
    static const char* const names[] = {"waiting for replies", "running the lab's code", "between requests", "?"};
    for (int k = 0; k < 4; ++k)
      if (timed[k])
        std::fprintf(stderr, "; %s: %.3f s in %llu", names[k], seconds[k], static_cast<unsigned long long>(timed[k]));
    std::fprintf(stderr, "\n");
  }
};
SendStats g_send_stats;

// 1: complete, 0: end of stream before the first byte, -1: broken in the middle.
int read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return got == 0 ? 0 : -1;
    got += static_cast<std::size_t>(r);
  }
  return 1;
}

// Reads the first bytes of a message with recvmsg, keeping a descriptor that rides with them.
int read_all_with_fd(int fd, void* data, std::size_t n, int* passed) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < n) {
    iovec io{p + got, n - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t r = ::recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return got == 0 ? 0 : -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int d;
        std::memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
        if (*passed < 0)
          *passed = d;
        else
          ::close(d);  // one descriptor per message
      }
    }
    got += static_cast<std::size_t>(r);
  }
  return 1;
}

// Sends a message's pieces with as few system calls as the socket allows (one, when the
// message fits the socket's buffer), so that the reader wakes once per message rather than once
// per piece; `control` (a descriptor) goes with the first byte.
void send_pieces(int fd, iovec* io, int count, void* control, std::size_t control_bytes) {
  while (count > 0 && io->iov_len == 0) ++io, --count;
  while (count > 0) {
    msghdr m{};
    m.msg_iov = io;
    m.msg_iovlen = static_cast<std::size_t>(count);
    m.msg_control = control;
    m.msg_controllen = control_bytes;
    const ssize_t w = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw ChannelError("the other process closed the channel");
    control = nullptr;  // the descriptor went with the first bytes
    control_bytes = 0;
    std::size_t sent = static_cast<std::size_t>(w);
    while (count > 0 && sent >= io->iov_len) {
      sent -= io->iov_len;
      ++io, --count;
    }
    if (count > 0) {
      io->iov_base = static_cast<char*>(io->iov_base) + sent;
      io->iov_len -= sent;
    }
  }
}

// Sends the header and the payload of a message, with a descriptor when passed >= 0.
void send_framed(int fd, std::uint32_t tag, const Writer& payload, int passed) {
  char header[12];
  const std::uint64_t len = payload.bytes().size() + payload.bulk_size();
  std::memcpy(header, &tag, 4);
  std::memcpy(header + 4, &len, 8);
  g_send_stats.note(tag, len);
  iovec io[3] = {{header, sizeof header},
                 {const_cast<char*>(payload.bytes().data()), payload.bytes().size()},
                 {const_cast<char*>(payload.bulk()), payload.bulk_size()}};
  if (passed < 0) {
    send_pieces(fd, io, 3, nullptr, 0);
    return;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
  send_pieces(fd, io, 3, control, sizeof control);
}

}  // namespace

bool stats_enabled() { return g_send_stats.enabled; }

void stats_note_time(StatsTime what, double seconds) {
  if (!g_send_stats.enabled) return;
  std::lock_guard<std::mutex> lock(g_send_stats.mutex);
  g_send_stats.seconds[static_cast<int>(what)] += seconds;
  g_send_stats.timed[static_cast<int>(what)] += 1;
}

void send_message_with_fd(int fd, std::uint32_t tag, const Writer& payload, int passed) {
  send_framed(fd, tag, payload, passed);
}

void send_message(int fd, std::uint32_t tag, const Writer& payload) { send_framed(fd, tag, payload, -1); }

bool receive_message(int fd, std::uint32_t& tag, Payload& payload, std::uint64_t max_size) {
  return receive_message_with_fd(fd, tag, payload, nullptr, max_size);
}

bool receive_message_with_fd(int fd, std::uint32_t& tag, Payload& payload, int* passed, std::uint64_t max_size) {
  if (passed) *passed = -1;
  char header[12];
  const int h = passed ? read_all_with_fd(fd, header, sizeof header, passed) : read_all(fd, header, sizeof header);
  if (h == 0) return false;
  if (h < 0) throw ChannelError("the channel broke in the middle of a message");
  std::uint64_t len = 0;
  std::memcpy(&tag, header, 4);
  std::memcpy(&len, header + 4, 8);
  if (len > max_size) throw ChannelError("malformed message: length " + std::to_string(len));
  payload.data.reset(new char[len > 0 ? len : 1]);
  payload.size = len;
  if (len > 0 && read_all(fd, payload.data.get(), len) != 1) {
    throw ChannelError("the channel broke in the middle of a message");
  }
  return true;
}

}  // namespace wb::remote
