/// @file
/// @brief Starts the worker (the student's code) with the least privilege the machine allows.
///
/// Applied when available, each on its own (the judge reports which ones held):
/// - user: as root, the worker runs as an unprivileged user (WB_SANDBOX_USER, default nobody);
/// - namespaces: network (no interface but a down loopback: no network), mount (the paths in
///   WB_SANDBOX_HIDE, e.g. solutions/, the build tree and the results' folders, are covered by
///   empty read-only tmpfs; the paths in WB_SANDBOX_READONLY, e.g. the repository, are read-only;
///   /tmp, /var/tmp and /dev/shm are private tmpfs of WB_SANDBOX_TMP_MB, default 256), PID (the worker is PID 1 of its own namespace: every process it
///   starts dies with it, and it sees no other process) and IPC; as root directly, otherwise
///   inside an unprivileged user namespace when the kernel allows one;
/// - limits: data size (WB_SANDBOX_MEMORY_MB, default 8192), file size (WB_SANDBOX_FILE_MB,
///   default 64), processes (WB_SANDBOX_PROCESSES above what the user already runs, default 256),
///   CPU time (WB_SANDBOX_CPU_S, default 900), no core files, no new privileges;
/// - the worker dies with the judge (parent-death signal) and inherits no descriptor but its
///   channel and its output, which goes to the judge's stderr.
/// WB_SANDBOX_SHARE lists paths (files or folders) that stay visible at their place under
/// whatever covers them, and WB_SANDBOX_LOOPBACK=up brings the network namespace's own loopback
/// up: both for the collective labs' worker job (checker/mpi_launch.py), whose ranks talk among
/// themselves and to their judges through sockets.
/// WB_SANDBOX=off turns all of it off (for debugging a check with gdb, say).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace wb::remote {

enum Protection : unsigned {
  kUnprivilegedUser = 1u << 0,
  kNoNetwork = 1u << 1,
  kHiddenPaths = 1u << 2,
  kPidNamespace = 1u << 3,
  kLimits = 1u << 4,
  kNoNewPrivileges = 1u << 5,
  kPrivateTmp = 1u << 6,
  kReadOnlyTree = 1u << 7,
};
constexpr unsigned kAllProtections = 0xffu;

struct Spawned {
  pid_t pid = -1;            ///< the process to wait for (it exits as the worker does)
  unsigned protections = 0;  ///< Protection bits that held
  std::string error;         ///< why the worker could not start ("" when it did)
};

/// Starts @p exe with @p args, its fd 3 being @p channel_fd, stdout and stderr going to this
/// process's stderr, inside the sandbox described above.
Spawned spawn_worker(const std::string& exe, const std::vector<std::string>& args, int channel_fd);

/// Starts @p exe (the checker's own code, never the lab's) as spawn_worker() does but outside the
/// sandbox: fd 3 is @p channel_fd, its output goes to this process's stderr, it dies with this
/// process. protections is 0.
Spawned spawn_trusted(const std::string& exe, const std::vector<std::string>& args, int channel_fd);

/// "unprivileged user, no network, ..." for the bits of @p protections; the missing ones are
/// listed by missing_protections().
std::string describe_protections(unsigned protections);
std::string missing_protections(unsigned protections);

}  // namespace wb::remote
