#include "sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

extern char** environ;

namespace wb::remote {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

rlim_t env_number(const char* name, rlim_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return end && *end == '\0' ? static_cast<rlim_t>(n) : fallback;
}

// Tasks (threads) the user already runs: RLIMIT_NPROC counts them all.
rlim_t tasks_of(uid_t uid) {
  rlim_t count = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  while (dirent* d = readdir(proc)) {
    if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
    const std::string task_dir = std::string("/proc/") + d->d_name + "/task";
    struct stat st {};
    if (stat(("/proc/" + std::string(d->d_name)).c_str(), &st) != 0 || st.st_uid != uid) continue;
    if (DIR* tasks = opendir(task_dir.c_str())) {
      while (dirent* t = readdir(tasks)) count += t->d_name[0] != '.';
      closedir(tasks);
    }
  }
  closedir(proc);
  return count;
}

bool write_file(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

bool set_limit(int resource, rlim_t value) {
  const rlimit lim{value, value};
  return setrlimit(resource, &lim) == 0;
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

volatile pid_t outer_child_worker = 0;  // the outer child's worker, for its SIGTERM handler

}  // namespace

Spawned spawn_worker(const std::string& exe, const std::vector<std::string>& args, int channel_fd) {
  Spawned result;
  const bool enabled = env_or("WB_SANDBOX", "on") != "off";
  const bool root = geteuid() == 0;

  // Everything the children need is prepared here: after fork they only make system calls.
  uid_t run_uid = getuid();
  gid_t run_gid = getgid();
  bool switch_user = false;
  if (enabled && root) {
    if (const passwd* pw = getpwnam(env_or("WB_SANDBOX_USER", "nobody").c_str()); pw && pw->pw_uid != 0) {
      run_uid = pw->pw_uid;
      run_gid = pw->pw_gid;
      switch_user = true;
    }
  }
  const std::vector<std::string> hide = enabled ? split_paths(env_or("WB_SANDBOX_HIDE", "")) : std::vector<std::string>{};
  std::vector<std::string> hidden;
  for (const auto& p : hide) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) hidden.push_back(p);
  }
  std::vector<std::string> readonly;
  for (const auto& p : enabled ? split_paths(env_or("WB_SANDBOX_READONLY", "")) : std::vector<std::string>{}) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) readonly.push_back(p);
  }
  // Paths that stay visible at their place whatever covers them (the collective labs' worker
  // job: its program and the folder of its sockets to the judges).
  std::vector<std::string> shared;
  for (const auto& p : enabled ? split_paths(env_or("WB_SANDBOX_SHARE", "")) : std::vector<std::string>{}) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0) shared.push_back(p);
  }
  const bool loopback = env_or("WB_SANDBOX_LOOPBACK", "down") == "up";
  std::string cwd;
  if (char buf[4096]; getcwd(buf, sizeof buf)) cwd = buf;
  const std::string tmp_options = "size=" + std::to_string(env_number("WB_SANDBOX_TMP_MB", 256)) + "m,mode=1777";
  const rlim_t memory = env_number("WB_SANDBOX_MEMORY_MB", 8192) << 20;
  const rlim_t file_size = env_number("WB_SANDBOX_FILE_MB", 64) << 20;
  const rlim_t processes = tasks_of(run_uid) + env_number("WB_SANDBOX_PROCESSES", 256);
  const rlim_t cpu = env_number("WB_SANDBOX_CPU_S", 900);
  const std::string uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
  const std::string gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";

  const int exe_fd = open(exe.c_str(), O_PATH | O_CLOEXEC);
  if (exe_fd < 0) {
    result.error = "cannot open " + exe + ": " + std::strerror(errno);
    return result;
  }
  std::vector<std::string> argv_storage{exe};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "WB_SANDBOX", 10) != 0) envp.push_back(*e);
  }
  envp.push_back(nullptr);

  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(exe_fd);
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }

  const pid_t outer = fork();
  if (outer < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    close(exe_fd);
    close(status_pipe[0]);
    close(status_pipe[1]);
    return result;
  }
  if (outer == 0) {
    // The outer child: enters the namespaces, then waits for the worker and exits as it did.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The judge is non-dumpable; a non-dumpable process cannot write its own uid_map.
    prctl(PR_SET_DUMPABLE, 1);
    close(status_pipe[0]);
    bool namespaces = false;
    if (enabled) {
      const int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC;
      if (root) {
        namespaces = unshare(flags) == 0;
      } else if (unshare(CLONE_NEWUSER | flags) == 0) {
        namespaces = write_file("/proc/self/setgroups", "deny") && write_file("/proc/self/uid_map", uid_map) &&
                     write_file("/proc/self/gid_map", gid_map);
      }
    }
    // SIGTERM to this process (the judge's way to end the worker) kills the worker: it may be
    // PID 1 of its namespace, which its parent's death alone does not end.
    sigset_t term, previous;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &previous);
    const pid_t worker = fork();
    if (worker < 0) _exit(126);
    if (worker > 0) {
      outer_child_worker = worker;
      signal(SIGTERM, [](int) { kill(outer_child_worker, SIGKILL); });
      sigprocmask(SIG_SETMASK, &previous, nullptr);
      // Hold none of the judge's descriptors (its report pipe among them) while waiting.
      syscall(SYS_close_range, 3u, ~0u, 0u);
      int status = 0;
      while (waitpid(worker, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status)) {
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
      }
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
    }
    // The worker.
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    signal(SIGTERM, SIG_DFL);
    unsigned protections = 0;
    if (namespaces) {
      protections |= kNoNetwork;
      if (loopback) {
        // The namespace's own loopback, for programs whose processes talk over TCP among
        // themselves (an MPI job); nothing outside the namespace is reachable through it.
        if (const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); s >= 0) {
          ifreq ifr{};
          std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
          if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
            ifr.ifr_flags |= IFF_UP;
            ioctl(s, SIOCSIFFLAGS, &ifr);
          }
          close(s);
        }
      }
      if (getpid() == 1) protections |= kPidNamespace;
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
        // A detached copy of the mount of the worker's own executable, taken before anything
        // covers it: it is put back at its path below (cusim's reports read its debug info).
        const int exe_tree = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, exe.c_str(),
                                                      1u /* OPEN_TREE_CLONE */ | O_CLOEXEC));
        std::vector<int> shared_trees;
        for (const auto& p : shared) {
          shared_trees.push_back(static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, p.c_str(),
                                                          1u /* OPEN_TREE_CLONE */ | 0x8000u /* AT_RECURSIVE */ |
                                                              O_CLOEXEC)));
        }
        bool ro = !readonly.empty();
        for (const auto& p : readonly) {
          ro = mount(p.c_str(), p.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0 &&
               mount(nullptr, p.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) == 0 &&
               ro;
        }
        // The rest of the host file system read-only too (best effort: the root mount only).
        mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
        if (ro) protections |= kReadOnlyTree;
        bool tmp = true;
        // /run holds world-writable /run/lock and the Unix sockets of the machine's services.
        for (const char* p : {"/tmp", "/var/tmp", "/dev/shm", "/run", "/var/lock", "/var/crash"}) {
          struct stat st {};
          if (stat(p, &st) != 0) continue;
          tmp = mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, tmp_options.c_str()) == 0 && tmp;
        }
        if (tmp) protections |= kPrivateTmp;
        bool all = !hidden.empty();
        for (const auto& p : hidden) {
          all = mount("tmpfs", p.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0555") == 0 && all;
        }
        // The worker's own executable stays readable at its path (it may lie under a hidden
        // build tree or a private /tmp): cusim's reports read its debug information.
        for (std::size_t slash = exe.find('/', 1); slash != std::string::npos; slash = exe.find('/', slash + 1)) {
          mkdir(exe.substr(0, slash).c_str(), 0755);
        }
        if (const int f = open(exe.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755); f >= 0) close(f);
        if (exe_tree >= 0) {
          syscall(SYS_move_mount, exe_tree, "", AT_FDCWD, exe.c_str(), 4u /* MOVE_MOUNT_F_EMPTY_PATH */);
        }
        for (std::size_t i = 0; i < shared.size(); ++i) {
          if (shared_trees[i] < 0) continue;
          const std::string& p = shared[i];
          struct stat st {};
          const bool dir = fstat(shared_trees[i], &st) == 0 && S_ISDIR(st.st_mode);
          for (std::size_t slash = p.find('/', 1); slash != std::string::npos; slash = p.find('/', slash + 1)) {
            mkdir(p.substr(0, slash).c_str(), 0755);
          }
          if (dir) {
            mkdir(p.c_str(), 0755);
          } else if (const int f = open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755); f >= 0) {
            close(f);
          }
          syscall(SYS_move_mount, shared_trees[i], "", AT_FDCWD, p.c_str(), 4u /* MOVE_MOUNT_F_EMPTY_PATH */);
        }
        for (const auto& p : hidden) {
          all = mount(nullptr, p.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "size=64k,mode=0555") == 0 && all;
        }
        if (all) protections |= kHiddenPaths;
        // The working directory was resolved before the mounts: re-enter it through them, so
        // relative paths see the hidden and read-only views too.
        if (!cwd.empty() && chdir(cwd.c_str()) != 0 && chdir("/") != 0) _exit(126);
        if (getpid() == 1) mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
      }
    }
    if (enabled) {
      bool limits = set_limit(RLIMIT_CORE, 0);
      limits = set_limit(RLIMIT_DATA, memory) && limits;
      limits = set_limit(RLIMIT_FSIZE, file_size) && limits;
      limits = set_limit(RLIMIT_NPROC, processes) && limits;
      limits = set_limit(RLIMIT_CPU, cpu) && limits;
      if (limits) protections |= kLimits;
      if (switch_user && setgroups(0, nullptr) == 0 && setgid(run_gid) == 0 && setuid(run_uid) == 0) {
        protections |= kUnprivilegedUser;
      }
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) protections |= kNoNewPrivileges;
    }
    // After the change of user, which clears it: the worker dies with the outer child.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // fd 3 is the channel, 1 and 2 the judge's stderr; every other descriptor closes at exec.
    const int status_fd = fcntl(status_pipe[1], F_DUPFD_CLOEXEC, 64);
    const int program_fd = fcntl(exe_fd, F_DUPFD_CLOEXEC, 64);
    if (channel_fd != 3) {
      dup2(channel_fd, 3);
    } else {
      fcntl(3, F_SETFD, 0);
    }
    dup2(2, 1);
    for (int fd = 4; fd < 64; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    syscall(SYS_close_range, 64u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    if (write(status_fd, &protections, sizeof protections) != sizeof protections) _exit(126);
    syscall(SYS_execveat, program_fd, "", argv.data(), envp.data(), AT_EMPTY_PATH);
    const int err = errno;
    if (write(status_fd, &err, sizeof err) != sizeof err) _exit(126);
    _exit(127);
  }
  close(exe_fd);
  close(status_pipe[1]);
  result.pid = outer;
  unsigned protections = 0;
  int err = 0;
  ssize_t n;
  while ((n = read(status_pipe[0], &protections, sizeof protections)) < 0 && errno == EINTR) {
  }
  if (n != sizeof protections) {
    result.error = "the worker process ended before it started the lab's code";
  } else {
    result.protections = protections;
    while ((n = read(status_pipe[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    if (n == sizeof err) result.error = "cannot start " + exe + ": " + std::strerror(err);
  }
  close(status_pipe[0]);
  return result;
}

std::string describe_protections(unsigned p) {
  std::string out;
  auto add = [&](unsigned bit, const char* text) {
    if (p & bit) out += (out.empty() ? "" : ", ") + std::string(text);
  };
  add(kUnprivilegedUser, "unprivileged user");
  add(kNoNetwork, "no network");
  add(kHiddenPaths, "solutions, build and results hidden");
  add(kPidNamespace, "own PID namespace");
  add(kLimits, "resource limits");
  add(kNoNewPrivileges, "no new privileges");
  add(kPrivateTmp, "private size-limited /tmp");
  add(kReadOnlyTree, "read-only source tree");
  return out;
}

std::string missing_protections(unsigned p) { return describe_protections(~p & kAllProtections); }

}  // namespace wb::remote
