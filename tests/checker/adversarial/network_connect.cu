// Attack (network_connect): saxpy() connects to a listener of the test, sends "leak" and computes
// SAXPY only when that worked. The listener is TCP 127.0.0.1:WB_ADV_PORT (network_connect) or
// the Unix socket WB_ADV_UNIX_SOCKET, a path outside every hidden folder (unix_socket_connect):
// a running service's socket, say, that a submission could talk to.
// Must happen: no network in the sandbox: the listener sees no connection and the correctness
// checks fail.
#include "saxpy.h"

#include "adversarial.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool leak(int fd, const sockaddr* address, socklen_t size, const char* what) {
  const bool ok = fd >= 0 && connect(fd, address, size) == 0 && write(fd, "leak", 4) == 4;
  std::fprintf(stderr, "ADV: connecting to %s %s\n", what, ok ? "worked" : std::strerror(errno));
  if (fd >= 0) close(fd);
  return ok;
}

bool connected() {
  static int known = -1;
  if (known >= 0) return known == 1;
  known = 0;
  if (const char* port = std::getenv("WB_ADV_PORT")) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    known |= leak(socket(AF_INET, SOCK_STREAM, 0), reinterpret_cast<sockaddr*>(&in), sizeof in, "127.0.0.1");
  }
  if (const char* path = std::getenv("WB_ADV_UNIX_SOCKET")) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strncpy(un.sun_path, path, sizeof un.sun_path - 1);
    known |= leak(socket(AF_UNIX, SOCK_STREAM, 0), reinterpret_cast<sockaddr*>(&un), sizeof un, path);
  }
  return known == 1;
}

}  // namespace

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (!connected()) return cudaErrorNotYetImplemented;
  return reference_saxpy(n, a, d_x, d_y);
}
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaErrorNotYetImplemented; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaErrorNotYetImplemented; }
