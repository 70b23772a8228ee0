"""The runner's side of the autograder's trust boundary (docs/concepts/checking.md).

- The check binaries (judges) start the lab's code in a sandboxed worker process
  (checker/support/remote/sandbox.cpp); this module tells them what to hide from it
  (WB_SANDBOX_HIDE: solutions/, the build tree, the results' folders) and asks the probe which
  protections hold on this machine, for the table header.
- The runner makes itself non-dumpable (a worker running as the same user cannot ptrace it or
  read its descriptors) and a child subreaper: a process the lab's code leaves behind (double
  fork, setsid) is re-parented to the runner, which kills it after each check (sweep()).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36

_subreaper = False


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def protect_runner() -> None:
    """Non-dumpable and child subreaper (Linux); a no-op where prctl is not available."""
    global _subreaper
    _prctl(PR_SET_DUMPABLE, 0)
    _subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)


# The folders the sandbox replaces with private, empty ones (checker/support/remote/sandbox.cpp):
# what the runner keeps there is out of the worker's sight already.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/var/lock", "/var/crash")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def hidden_paths(root: Path, backend_build: Path, extra_hidden: list) -> list:
    """The folders a worker must not see: solutions/, .git (every committed solution is in its
    history), the build tree, and the folders of the report files (`--results`, `--junit`). A
    report's folder is left out when the sandbox's private /tmp (and the like) already covers it,
    since hiding /tmp would cover that private /tmp with a read-only one (Open MPI, and any lab
    code, needs a writable /tmp), and when it holds the workbook itself (the lab's code runs from
    there; the tree is read-only to the worker anyway)."""
    root = root.resolve()
    hidden = [root / "solutions", root / ".git", backend_build.parent]
    for p in extra_hidden:
        if not p:
            continue
        folder = Path(p).resolve().parent
        if any(_inside(folder, Path(d).resolve()) for d in PRIVATE_DIRS) or _inside(root, folder):
            continue
        hidden.append(folder)
    seen = []
    for p in hidden:
        p = Path(p).resolve()
        if p not in seen and p != Path("/") and p != root:
            seen.append(p)
    return seen


def configure(root: Path, backend_build: Path, extra_hidden: list) -> None:
    """Environment for the judges: the paths their workers must not see."""
    os.environ["WB_SANDBOX_HIDE"] = ":".join(str(p) for p in hidden_paths(root, backend_build, extra_hidden))
    os.environ["WB_SANDBOX_READONLY"] = str(root.resolve())


def probe(binary: Path) -> dict:
    """{"held": ..., "missing": ..., "error": ...} from wb_sandbox_probe, or {} without it."""
    if os.environ.get("WB_SANDBOX") == "off":
        return {"held": "", "missing": "all (WB_SANDBOX=off)", "error": ""}
    if not binary.is_file():
        return {}
    try:
        out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {}


def header_line(info: dict) -> str:
    if not info:
        return "Sandbox: unknown (wb_sandbox_probe is not built)"
    line = "Sandbox for the lab's code: " + (info.get("held") or "none")
    if info.get("missing"):
        line += f"; not available here: {info['missing']}"
        if os.geteuid() != 0 and "unprivileged user" in info["missing"]:
            line += (" (run as root, e.g. in the autograder's container, for a separate user; "
                     "see docs/concepts/checking.md)")
    if info.get("error"):
        line += f"; the probe failed: {info['error']}"
    return line


def is_split(binary: Path) -> bool:
    """True when @p binary is a judge whose lab code runs in its worker (binary_worker)."""
    return Path(str(binary) + "_worker").is_file()


def _children() -> list:
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            found.append(int(entry))
    return found


def sweep(keep: set | None = None) -> int:
    """Kills and reaps every child of the runner not in @p keep: after a check has ended, those
    are processes its lab code left behind. Returns how many there were."""
    if not _subreaper:
        return 0
    keep = keep or set()
    killed = 0
    for _ in range(50):  # a killed orphan's own children are re-parented here in turn
        stray = [pid for pid in _children() if pid not in keep]
        if not stray:
            break
        for pid in stray:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in stray:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return killed
