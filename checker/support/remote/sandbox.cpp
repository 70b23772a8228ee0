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

// The worker's sandbox, decided in the judge before fork: after fork the children only make
// system calls on these values (and create the few directories a mount point needs).
struct Plan {
  bool enabled = false;  // WB_SANDBOX is not "off"
  bool root = false;     // the judge runs as root: namespaces without a user namespace
  bool switch_user = false;
  uid_t run_uid = 0;
  gid_t run_gid = 0;
  std::vector<std::string> hidden;    // folders covered by an empty read-only tmpfs
  std::vector<std::string> readonly;  // folders bound read-only
  std::vector<std::string> shared;    // paths that stay visible at their place
  bool loopback = false;              // bring the namespace's own loopback up
  std::string cwd;
  std::string tmp_options;
  rlim_t memory = 0, file_size = 0, processes = 0, cpu = 0;
  std::string uid_map, gid_map;  // for an unprivileged user namespace
  std::string exe;
  int exe_fd = -1;  // O_PATH to the worker's executable, for execveat
  int channel_fd = -1;
  std::vector<std::string> argv_storage;
  std::vector<char*> argv, envp;
};

// The existing paths of a WB_SANDBOX_* list (folders only when @p folders).
std::vector<std::string> existing(const Plan& plan, const char* variable, bool folders) {
  std::vector<std::string> out;
  if (!plan.enabled) return out;
  for (const auto& p : split_paths(env_or(variable, ""))) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && (!folders || S_ISDIR(st.st_mode))) out.push_back(p);
  }
  return out;
}

// Fills @p plan (which must not move afterwards: argv points into it); "" or why it cannot.
std::string make_plan(Plan& plan, const std::string& exe, const std::vector<std::string>& args, int channel_fd) {
  plan.enabled = env_or("WB_SANDBOX", "on") != "off";
  plan.root = geteuid() == 0;
  plan.run_uid = getuid();
  plan.run_gid = getgid();
  if (plan.enabled && plan.root) {
    if (const passwd* pw = getpwnam(env_or("WB_SANDBOX_USER", "nobody").c_str()); pw && pw->pw_uid != 0) {
      plan.run_uid = pw->pw_uid;
      plan.run_gid = pw->pw_gid;
      plan.switch_user = true;
    }
  }
  plan.hidden = existing(plan, "WB_SANDBOX_HIDE", true);
  plan.readonly = existing(plan, "WB_SANDBOX_READONLY", true);
  // The collective labs' worker job: its program and the folder of its sockets to the judges.
  plan.shared = existing(plan, "WB_SANDBOX_SHARE", false);
  plan.loopback = env_or("WB_SANDBOX_LOOPBACK", "down") == "up";
  if (char buf[4096]; getcwd(buf, sizeof buf)) plan.cwd = buf;
  plan.tmp_options = "size=" + std::to_string(env_number("WB_SANDBOX_TMP_MB", 256)) + "m,mode=1777";
  plan.memory = env_number("WB_SANDBOX_MEMORY_MB", 8192) << 20;
  plan.file_size = env_number("WB_SANDBOX_FILE_MB", 64) << 20;
  plan.processes = tasks_of(plan.run_uid) + env_number("WB_SANDBOX_PROCESSES", 256);
  plan.cpu = env_number("WB_SANDBOX_CPU_S", 900);
  plan.uid_map = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
  plan.gid_map = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";
  plan.exe = exe;
  plan.channel_fd = channel_fd;
  plan.exe_fd = open(exe.c_str(), O_PATH | O_CLOEXEC);
  if (plan.exe_fd < 0) return "cannot open " + exe + ": " + std::strerror(errno);
  plan.argv_storage.push_back(exe);
  plan.argv_storage.insert(plan.argv_storage.end(), args.begin(), args.end());
  for (auto& a : plan.argv_storage) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "WB_SANDBOX", 10) != 0) plan.envp.push_back(*e);
  }
  plan.envp.push_back(nullptr);
  return "";
}

// ---- after fork: the outer child ----------------------------------------------------------------

// Network, mount, PID and IPC namespaces: directly as root, else inside a user namespace that
// maps only the judge's own user.
bool enter_namespaces(const Plan& plan) {
  if (!plan.enabled) return false;
  const int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC;
  if (plan.root) return unshare(flags) == 0;
  return unshare(CLONE_NEWUSER | flags) == 0 && write_file("/proc/self/setgroups", "deny") &&
         write_file("/proc/self/uid_map", plan.uid_map) && write_file("/proc/self/gid_map", plan.gid_map);
}

// The outer child after it forked the worker: waits for it and exits as it did. SIGTERM (the
// judge's way to end the worker) kills the worker: it may be PID 1 of its namespace, which its
// parent's death alone does not end.
[[noreturn]] void wait_for_worker(pid_t worker, const sigset_t& previous) {
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

// ---- after fork: the worker, before it runs the lab's code ------------------------------------

// The network namespace's own loopback, for programs whose processes talk over TCP among
// themselves (an MPI job); nothing outside the namespace is reachable through it.
void bring_up_loopback() {
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

// Creates the parent folders of @p path (a mount point to be).
void make_parents(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    mkdir(path.substr(0, slash).c_str(), 0755);
  }
}

// Puts a detached mount tree (open_tree) at @p path, creating the file or folder it covers.
void put_tree(int tree, const std::string& path, bool folder) {
  make_parents(path);
  if (folder) {
    mkdir(path.c_str(), 0755);
  } else if (const int f = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755); f >= 0) {
    close(f);
  }
  syscall(SYS_move_mount, tree, "", AT_FDCWD, path.c_str(), 4u /* MOVE_MOUNT_F_EMPTY_PATH */);
}

// The worker's view of the file system, in its own mount namespace: the tree read-only, private
// size-limited temporary folders, the hidden paths covered, the worker's own executable and the
// shared paths visible at their places. Returns the Protection bits that held.
unsigned build_file_system_view(const Plan& plan) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 0;
  unsigned protections = 0;
  // Detached copies of the mounts of the worker's own executable (cusim's reports read its
  // debug info) and of the shared paths, taken before anything covers them.
  const int exe_tree =
      static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, plan.exe.c_str(), 1u /* OPEN_TREE_CLONE */ | O_CLOEXEC));
  std::vector<int> shared_trees;
  for (const auto& p : plan.shared) {
    shared_trees.push_back(static_cast<int>(syscall(
        SYS_open_tree, AT_FDCWD, p.c_str(), 1u /* OPEN_TREE_CLONE */ | 0x8000u /* AT_RECURSIVE */ | O_CLOEXEC)));
  }
  bool ro = !plan.readonly.empty();
  for (const auto& p : plan.readonly) {
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
    tmp = mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, plan.tmp_options.c_str()) == 0 && tmp;
  }
  if (tmp) protections |= kPrivateTmp;
  bool all = !plan.hidden.empty();
  for (const auto& p : plan.hidden) {
    all = mount("tmpfs", p.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0555") == 0 && all;
  }
  // The worker's own executable stays readable at its path (it may lie under a hidden build tree
  // or a private /tmp).
  if (exe_tree >= 0) {
    put_tree(exe_tree, plan.exe, false);
  } else {
    make_parents(plan.exe);
    if (const int f = open(plan.exe.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0755); f >= 0) close(f);
  }
  for (std::size_t i = 0; i < plan.shared.size(); ++i) {
    if (shared_trees[i] < 0) continue;
    struct stat st {};
    put_tree(shared_trees[i], plan.shared[i], fstat(shared_trees[i], &st) == 0 && S_ISDIR(st.st_mode));
  }
  for (const auto& p : plan.hidden) {
    all = mount(nullptr, p.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "size=64k,mode=0555") == 0 && all;
  }
  if (all) protections |= kHiddenPaths;
  // The working directory was resolved before the mounts: re-enter it through them, so relative
  // paths see the hidden and read-only views too.
  if (!plan.cwd.empty() && chdir(plan.cwd.c_str()) != 0 && chdir("/") != 0) _exit(126);
  if (getpid() == 1) mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  return protections;
}

// Resource limits, then the unprivileged user, then no new privileges. Returns the bits that held.
unsigned limit_and_drop_privileges(const Plan& plan) {
  if (!plan.enabled) return 0;
  unsigned protections = 0;
  bool limits = set_limit(RLIMIT_CORE, 0);
  limits = set_limit(RLIMIT_DATA, plan.memory) && limits;
  limits = set_limit(RLIMIT_FSIZE, plan.file_size) && limits;
  limits = set_limit(RLIMIT_NPROC, plan.processes) && limits;
  limits = set_limit(RLIMIT_CPU, plan.cpu) && limits;
  if (limits) protections |= kLimits;
  if (plan.switch_user && setgroups(0, nullptr) == 0 && setgid(plan.run_gid) == 0 && setuid(plan.run_uid) == 0) {
    protections |= kUnprivilegedUser;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) protections |= kNoNewPrivileges;
  return protections;
}

// Hands the worker its descriptors (fd 3 the channel, 1 and 2 the judge's stderr; every other
// one closes at exec), tells the judge which protections held and runs the program. On failure
// the judge reads errno after the protections.
[[noreturn]] void exec_worker(const Plan& plan, int status_pipe, unsigned protections) {
  // After the change of user, which clears it: the worker dies with the outer child.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int status_fd = fcntl(status_pipe, F_DUPFD_CLOEXEC, 64);
  const int program_fd = fcntl(plan.exe_fd, F_DUPFD_CLOEXEC, 64);
  if (plan.channel_fd != 3) {
    dup2(plan.channel_fd, 3);
  } else {
    fcntl(3, F_SETFD, 0);
  }
  dup2(2, 1);
  for (int fd = 4; fd < 64; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  syscall(SYS_close_range, 64u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
  if (write(status_fd, &protections, sizeof protections) != sizeof protections) _exit(126);
  syscall(SYS_execveat, program_fd, "", plan.argv.data(), plan.envp.data(), AT_EMPTY_PATH);
  const int err = errno;
  if (write(status_fd, &err, sizeof err) != sizeof err) _exit(126);
  _exit(127);
}

// The outer child: enters the namespaces, forks the worker (PID 1 of the new PID namespace),
// and waits for it; the worker builds its view, drops its privileges and runs the program.
[[noreturn]] void run_outer_child(const Plan& plan, int status_pipe) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The judge is non-dumpable; a non-dumpable process cannot write its own uid_map.
  prctl(PR_SET_DUMPABLE, 1);
  const bool namespaces = enter_namespaces(plan);
  sigset_t term, previous;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &previous);
  const pid_t worker = fork();
  if (worker < 0) _exit(126);
  if (worker > 0) wait_for_worker(worker, previous);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  signal(SIGTERM, SIG_DFL);
  unsigned protections = 0;
  if (namespaces) {
    protections |= kNoNetwork;
    if (plan.loopback) bring_up_loopback();
    if (getpid() == 1) protections |= kPidNamespace;
    protections |= build_file_system_view(plan);
  }
  protections |= limit_and_drop_privileges(plan);
  exec_worker(plan, status_pipe, protections);
}

// ---- the judge: what the children said --------------------------------------------------------

// Reads the protections the worker reported before exec and, when exec failed, its errno.
void read_start_status(int status_fd, Spawned& result, const std::string& exe) {
  unsigned protections = 0;
  int err = 0;
  ssize_t n;
  while ((n = read(status_fd, &protections, sizeof protections)) < 0 && errno == EINTR) {
  }
  if (n != sizeof protections) {
    result.error = "the worker process ended before it started the lab's code";
    return;
  }
  result.protections = protections;
  while ((n = read(status_fd, &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == sizeof err) result.error = "cannot start " + exe + ": " + std::strerror(err);
}

}  // namespace

Spawned spawn_worker(const std::string& exe, const std::vector<std::string>& args, int channel_fd) {
  Spawned result;
  Plan plan;  // everything the children need, prepared here
  if (std::string why = make_plan(plan, exe, args, channel_fd); !why.empty()) {
    result.error = why;
    return result;
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(plan.exe_fd);
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t outer = fork();
  if (outer < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    close(plan.exe_fd);
    close(status_pipe[0]);
    close(status_pipe[1]);
    return result;
  }
  if (outer == 0) {
    close(status_pipe[0]);
    run_outer_child(plan, status_pipe[1]);
  }
  close(plan.exe_fd);
  close(status_pipe[1]);
  result.pid = outer;
  read_start_status(status_pipe[0], result, exe);
  close(status_pipe[0]);
  return result;
}

Spawned spawn_trusted(const std::string& exe, const std::vector<std::string>& args, int channel_fd) {
  Spawned result;
  std::vector<std::string> strings{exe};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t child = fork();
  if (child < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    close(status_pipe[0]);
    close(status_pipe[1]);
    return result;
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int status_fd = fcntl(status_pipe[1], F_DUPFD_CLOEXEC, 64);
    if (channel_fd != 3) {
      dup2(channel_fd, 3);
    } else {
      fcntl(3, F_SETFD, 0);
    }
    dup2(2, 1);
    for (int fd = 4; fd < 64; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    syscall(SYS_close_range, 64u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    execv(exe.c_str(), argv.data());
    const int err = errno;
    if (write(status_fd, &err, sizeof err) != sizeof err) _exit(126);
    _exit(127);
  }
  close(status_pipe[1]);
  result.pid = child;
  int err = 0;
  ssize_t n;
  while ((n = read(status_pipe[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  if (n == sizeof err) result.error = "cannot start " + exe + ": " + std::strerror(err);
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
