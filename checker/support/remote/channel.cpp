#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "wb_remote.h"

namespace wb::remote {
namespace {

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

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

}  // namespace

void send_message_with_fd(int fd, std::uint32_t tag, const Writer& payload, int passed) {
  char header[12];
  const std::uint64_t len = payload.bytes().size() + payload.bulk_size();
  std::memcpy(header, &tag, 4);
  std::memcpy(header + 4, &len, 8);
  iovec io{header, sizeof header};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
  ssize_t w;
  while ((w = ::sendmsg(fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  // The header and its descriptor go in one piece; the payload follows.
  if (w < 0 || (w < static_cast<ssize_t>(sizeof header) &&
                !write_all(fd, header + w, sizeof header - static_cast<std::size_t>(w))) ||
      !write_all(fd, payload.bytes().data(), payload.bytes().size()) ||
      !write_all(fd, payload.bulk(), payload.bulk_size())) {
    throw ChannelError("the other process closed the channel");
  }
}

void send_message(int fd, std::uint32_t tag, const Writer& payload) {
  char header[12];
  const std::uint64_t len = payload.bytes().size() + payload.bulk_size();
  std::memcpy(header, &tag, 4);
  std::memcpy(header + 4, &len, 8);
  if (!write_all(fd, header, sizeof header) || !write_all(fd, payload.bytes().data(), payload.bytes().size()) ||
      !write_all(fd, payload.bulk(), payload.bulk_size())) {
    throw ChannelError("the other process closed the channel");
  }
}

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
