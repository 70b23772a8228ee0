#include "comm/status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace comm::status {
namespace {

char* g_record = nullptr;
std::string g_dir;
bool g_starting = false;  // state "starting" until set_ready()

void put(std::size_t offset, std::size_t size, const char* text) {
  if (!g_record) return;
  std::size_t n = std::strlen(text);
  if (n >= size) n = size - 1;
  std::memcpy(g_record + offset, text, n);
  std::memset(g_record + offset + n, 0, size - n);
}

}  // namespace

void open(int rank) {
  if (g_record) return;
  const char* dir = std::getenv("WB_COMM_STATUS_DIR");
  if (!dir || !*dir) return;
  std::string path = std::string(dir) + "/rank-" + std::to_string(rank) + ".status";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "%s:%d: cannot create status record %s: %s (continuing without it)\n", __FILE__,
                 __LINE__, path.c_str(), std::strerror(errno));
    return;
  }
  if (::ftruncate(fd, record_size) != 0) {
    ::close(fd);
    return;
  }
  void* p = ::mmap(nullptr, record_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return;
  g_record = static_cast<char*>(p);
  g_dir = dir;
  // The launcher uses the pid to make sure no rank outlives a killed job.
  if (FILE* f = std::fopen((g_dir + "/rank-" + std::to_string(rank) + ".pid").c_str(), "w")) {
    std::fprintf(f, "%ld\n", static_cast<long>(::getpid()));
    std::fclose(f);
  }
  std::memset(g_record, 0, record_size);
  put(state_offset, state_size, "starting");
  g_starting = true;
  set_activity("starting");
}

void set_ready() {
  if (!g_record || !g_starting) return;
  g_starting = false;
  put(state_offset, state_size, "running");
  set_running();
}

bool enabled() { return g_record != nullptr; }

std::string directory() { return g_dir; }

void set_test(const std::string& name) {
  set_ready();
  put(test_offset, test_size, name.c_str());
  set_running();
}

namespace {
struct Activity {
  std::int32_t op, peer, tag, nreq;
  std::uint64_t bytes;
};
static_assert(sizeof(Activity) == 24 && activity_text_offset == sizeof(Activity));

void put_activity(Op op, int peer, int tag, std::size_t bytes, std::size_t nreq) {
  Activity a{static_cast<std::int32_t>(op), peer, tag, static_cast<std::int32_t>(nreq), bytes};
  std::memcpy(g_record + activity_offset, &a, sizeof a);
  // A lab's communication thread may report beside its main thread: the counter is atomic.
  static_assert(progress_offset % alignof(std::uint64_t) == 0 && progress_size == sizeof(std::uint64_t));
  __atomic_fetch_add(reinterpret_cast<std::uint64_t*>(g_record + progress_offset), 1, __ATOMIC_RELAXED);
}
}  // namespace

void set_blocked(Op op, int peer, int tag, std::size_t bytes, std::size_t nreq) {
  if (g_record) put_activity(op, peer, tag, bytes, nreq);
}

void set_running() {
  if (g_record) put_activity(Op::running, 0, 0, 0, 0);
}

void set_activity(const char* fmt, ...) {
  if (!g_record) return;
  char line[activity_size - activity_text_offset];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  put_activity(Op::text, 0, 0, 0, 0);
  put(activity_offset + activity_text_offset, activity_size - activity_text_offset, line);
}

void set_done() { put(state_offset, state_size, "done"); }

void set_error(const std::string& message) { put(state_offset, state_size, ("error: " + message).c_str()); }

}  // namespace comm::status
