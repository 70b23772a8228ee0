#!/usr/bin/env python3
"""Run a collective check binary under mpirun, with time limits, naming the rank that failed.

The check binaries of the collective labs (09, 10, 11) are GoogleTest programs built on
common/comm (comm::check::run_all_tests). Every rank runs every test; rank 0's verdict is
the job's. This module launches them the way learners' jobs run in production (Open MPI,
one process per rank) and turns what can go wrong into a failed check with a clear message:

- a rank that crashes (signal, MPI error, exception): named, with the check it was in and
  the call it was making;
- a job that deadlocks: stopped once every rank has been blocked in a communication call (or
  done) for a few seconds with no call completing (a progress counter in each rank's record),
  long before the time limit; a job that hangs otherwise: killed after the time limit of the
  running check. A check's time limit counts from when every rank has started: the start of
  the ranks (MPI_Init, each rank's CUDA context, the communicator) has a limit of its own
  (start_limit_s, generous), and a start that exceeds it fails the checks with a message that
  names the start and the ranks still in it. Every rank that did not finish is named with the call it was blocked in (for
  example "blocked in send(to=1, tag=0, bytes=4194316)"); every rank blocked in send is
  reported as a send-send deadlock;
- a job that prints without end: stopped after 8 MiB;
- no process outlives a run: mpirun runs in its own process group, the whole group is
  killed on a time limit, and every rank's pid is checked afterwards.

How ranks report: the launcher sets WB_COMM_STATUS_DIR to a fresh temporary directory. Each
rank maps rank-<R>.status there (current check, current activity, state) and writes
rank-<R>.pid; rank 0 appends one JSON line per finished check to results.jsonl. When a check
hangs or crashes, the checks that finished keep their results, that check fails, and the
remaining checks run in a new job.

Standard library only. Command line (for people and for ctest):
    python3 checker/mpi_launch.py BINARY --ranks 1,2,3 [--tcp] [--time-limit 60] [--stall 5]
                                  [--start-limit 120] [--filter GLOB]
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from typing import Iterable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symbolize  # noqa: E402  (checker/symbolize.py, beside this file)

# The per-rank status record is declared once, in common/comm/include/comm/status.h (its layout
# and the Op codes) and comm/communicator.h (the Collective codes); the launcher reads them there.
_COMM_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "common", "comm", "include", "comm")


def _enum(text: str, name: str, header: str) -> dict:
    """{value: name} of `enum class <name>` in the header's text."""
    m = re.search(r"enum\s+class\s+" + name + r"\b[^{]*\{(.*?)\};", text, re.S)
    if not m:
        raise RuntimeError(f"{header}: enum class {name} not found (the status record's codes are read from it)")
    return {int(v): n for n, v in re.findall(r"^\s*(\w+)\s*=\s*(\d+)\s*,", m.group(1), re.M)}


def _status_layout() -> dict:
    status_h = os.path.join(_COMM_INCLUDE, "status.h")
    communicator_h = os.path.join(_COMM_INCLUDE, "communicator.h")
    with open(status_h, encoding="utf-8") as f:
        status = f.read()
    with open(communicator_h, encoding="utf-8") as f:
        communicator = f.read()
    sizes = {n: int(v) for n, v in re.findall(r"\b(\w+_(?:offset|size))\s*=\s*(\d+)", status)}
    needed = ("test_offset", "test_size", "activity_offset", "activity_size", "state_offset", "state_size",
              "progress_offset", "activity_text_offset")
    missing = [n for n in needed if n not in sizes]
    if missing:
        raise RuntimeError(f"{status_h}: {', '.join(missing)} not found (the status record's layout is read from it)")
    ops = {n: v for v, n in _enum(status, "Op", status_h).items()}
    missing = [n for n in ("send", "recv", "wait_isend", "wait_irecv", "barrier", "library_allreduce", "text",
                           "library") if n not in ops]
    if missing:
        raise RuntimeError(f"{status_h}: Op {', '.join(missing)} not found")
    return {"sizes": sizes, "ops": ops, "collectives": _enum(communicator, "Collective", communicator_h)}


_LAYOUT = _status_layout()
_SIZES = _LAYOUT["sizes"]
_TEST = (_SIZES["test_offset"], _SIZES["test_size"])
_ACTIVITY = (_SIZES["activity_offset"], _SIZES["activity_size"])
_STATE = (_SIZES["state_offset"], _SIZES["state_size"])
_PROGRESS = _SIZES["progress_offset"]  # uint64, incremented on every activity change
_OP = _LAYOUT["ops"]

DEFAULT_STALL_S = 5.0  # every rank blocked and none moving this long: a deadlock
# The ranks' start (MPI_Init; on a GPU each rank's CUDA context, several ranks sharing one GPU;
# the communicator, NCCL's bootstrap): not counted in a check's time limit, but in this one.
# Above the 60 s a split judge waits for its worker to connect (WB_COMM_REMOTE_WAIT_S), so that
# the judge's own message about a worker that never started comes first.
DEFAULT_START_LIMIT_S = 120.0
MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # a job that prints more is stopped (a print in a loop)

DEFAULT_RANKS = (1, 2, 3, 4, 5, 8)


@dataclasses.dataclass
class CheckResult:
    """One check (GoogleTest test) at one rank count."""

    name: str  # "Correctness.RingAllreduceFloatSum"
    ranks: int
    tcp: bool
    status: str  # passed | failed | skipped | crashed | timeout | error
    message: str = ""
    properties: dict = dataclasses.field(default_factory=dict)  # measured, threshold, hint
    time_s: float = 0.0

    @property
    def label(self) -> str:
        """The check's name with its launch configuration, e.g. "Correctness.X [n=4, tcp]"."""
        return f"{self.name} [n={self.ranks}{', tcp' if self.tcp else ''}]"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def failed(self) -> bool:
        """Neither passed nor skipped (failed, crashed, timed out, ...)."""
        return self.status not in ("passed", "skipped")


def _own_process_group() -> dict:
    """Popen arguments that start a job in a process group of its own (killed as one, and not in
    the terminal's foreground group, so Ctrl-C reaches the launcher, which stops the job), but in
    the launcher's session. Not a session of its own: Linux schedules each session as one group
    (autogroup, on by default), so the two jobs of a split check (the judges and their workers)
    would then share the CPU half and half, whatever each needs. A worker spinning in the lab's
    MPI wait for a peer would take the workers' half while the judges preparing that peer's
    request queue on the other: lab 09's split at 8 ranks ran 2-3x slower per call than the same
    checks in one job (docs/perf/check-isolation.md, 2026-11-27)."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}


def _mpirun() -> str:
    exe = shutil.which("mpirun") or shutil.which("mpiexec")
    if not exe:
        raise FileNotFoundError(
            "mpirun was not found on PATH; install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin "
            "libopenmpi-dev)")
    return exe


def _mpi_env(status_dir: Optional[str], base: Optional[dict] = None) -> dict:
    env = dict(os.environ if base is None else base)
    # Open MPI refuses to run as root without both variables (containers, CI, autograders).
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if status_dir:
        env["WB_COMM_STATUS_DIR"] = status_dir
    env.setdefault("GTEST_COLOR", "no")
    return env


def mpirun_command(binary: str, ranks: int, args: Iterable[str] = (), tcp: bool = False,
                   mpirun: Optional[str] = None) -> list:
    """The mpirun command line for `ranks` processes of `binary` (more ranks than cores allowed).

    With tcp=True MPI is restricted to its TCP transport on the loopback interface
    (--mca btl tcp,self), the path messages take between machines."""
    cmd = [mpirun or _mpirun(), "-n", str(ranks), "--oversubscribe"]
    if tcp:
        cmd += ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"]
    return cmd + [binary] + list(args)


def list_tests(binary: str, timeout_s: float = 60.0) -> list:
    """Test names of a GoogleTest binary, in run order ("Suite.Name")."""
    out = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True, timeout=timeout_s,
                         env=_mpi_env(None), check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} --gtest_list_tests failed (exit {out.returncode}): {out.stderr.strip()}")
    tests, suite = [], ""
    for line in out.stdout.splitlines():
        if not line.strip() or line.startswith("Running main"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            tests.append(suite + line.split("#")[0].strip())
    return tests


def _read_status(path: str) -> Optional[dict]:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None

    def field(span):
        return raw[span[0]:span[0] + span[1]].split(b"\0", 1)[0].decode("utf-8", "replace")

    if len(raw) < _STATE[0] + _STATE[1]:
        return None
    progress = struct.unpack_from("<Q", raw, _PROGRESS)[0] if len(raw) >= _PROGRESS + 8 else None
    return {"test": field(_TEST), "activity": _activity(raw[_ACTIVITY[0]:_ACTIVITY[0] + _ACTIVITY[1]]),
            "state": field(_STATE), "progress": progress}


def _activity(raw: bytes) -> str:
    """Text of the activity field: int32 op, peer, tag, nreq, uint64 bytes (status.h)."""
    op, peer, tag, nreq, nbytes = struct.unpack_from("<iiiiQ", raw, 0)
    more = f" and {nreq - 1} more request(s)" if nreq > 1 else ""
    if op == _OP["send"]:
        return f"blocked in send(to={peer}, tag={tag}, bytes={nbytes})"
    if op == _OP["recv"]:
        return f"blocked in recv(from={peer}, tag={tag}, bytes={nbytes})"
    if op == _OP["wait_isend"]:
        return f"blocked in wait(isend to={peer}, tag={tag}, bytes={nbytes}){more}"
    if op == _OP["wait_irecv"]:
        return f"blocked in wait(irecv from={peer}, tag={tag}, bytes={nbytes}){more}"
    if op == _OP["barrier"]:
        return "blocked in barrier()"
    if op == _OP["library_allreduce"]:
        return f"blocked in library_allreduce(bytes={nbytes})"
    if op == _OP["library"]:
        name = _LAYOUT["collectives"].get(tag, "collective")
        rooted = name in ("broadcast", "reduce", "gather", "scatter")
        return f"blocked in library_{name}(" + (f"root={peer}, " if rooted else "") + f"bytes={nbytes})"
    if op == _OP["text"]:
        return raw[_SIZES["activity_text_offset"]:].split(b"\0", 1)[0].decode("utf-8", "replace")
    return "running"


def _statuses(status_dir: str, ranks: int) -> dict:
    return {r: _read_status(os.path.join(status_dir, f"rank-{r}.status")) for r in range(ranks)}


def _pids(status_dir: str, ranks: int) -> dict:
    pids = {}
    for r in range(ranks):
        try:
            with open(os.path.join(status_dir, f"rank-{r}.pid")) as f:
                pids[r] = int(f.read().strip())
        except (OSError, ValueError):
            pass
    return pids


def _alive(pid: int, binary: str) -> bool:
    """True while process `pid` of `binary` exists and is not a zombie. A process that is
    exiting has an empty command line: it still counts as alive until it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")[0].decode("utf-8", "replace")
    except (OSError, IndexError):
        return False
    if state in ("Z", "X"):
        return False
    return not cmd or os.path.basename(cmd) == os.path.basename(binary)


def _kill_job(proc: subprocess.Popen, status_dir: str, ranks: int, binary: str) -> list:
    """Kills mpirun's process group, then any rank still alive; returns pids that survived."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    survivors = []
    deadline = time.monotonic() + 5.0
    for r, pid in _pids(status_dir, ranks).items():
        while _alive(pid, binary) and time.monotonic() < deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        if _alive(pid, binary):
            survivors.append(pid)
    return survivors


def _read_results(status_dir: str) -> dict:
    results = {}
    try:
        with open(os.path.join(status_dir, "results.jsonl")) as f:
            for line in f:
                line = line.strip()
                if line:
                    d = json.loads(line)
                    results[d["name"]] = d
    except (OSError, ValueError):
        pass
    return results


_SIGNAL_RE = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+) \(([^)]*)\)")
_GTEST_PROGRESS_RE = re.compile(r"^(Note: Google Test filter = |\[ RUN      \]|\[==========\]|\[----------\])")
_IMPROPER_RE = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exiting improperly")
_EXIT_RE = re.compile(r"Process name: \[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+)")


def _describe_ranks(st: dict, skip_done: bool = True) -> list:
    lines = []
    for r, s in sorted(st.items()):
        if s is None:
            lines.append(f"rank {r}: never started (no status record)")
        elif skip_done and s["state"] == "done":
            continue
        else:
            where = f" in {s['test']}" if s["test"] else ""
            lines.append(f"rank {r}: {s['activity'] or 'running'}{where}")
    return lines


def _deadlock_hint(st: dict) -> str:
    blocked = [s for s in st.values() if s and s["state"] != "done"]
    if blocked and all(s["activity"].startswith("blocked in send(") for s in blocked):
        return ("Every rank is blocked in a blocking send: a send-send deadlock. Each rank sends before it posts "
                "the matching receive, and large messages wait for the receiver. Post the receive first "
                "(irecv, then send, then wait), or order the calls by rank parity.")
    if blocked and all(s["activity"].startswith("blocked in") for s in blocked):
        return ("Every unfinished rank is blocked waiting for a message or a request: a deadlock, or sender and "
                "receiver disagree on peer or tag (a receive whose message is never sent).")
    return "A rank did not finish in time: an endless loop, or a wait for a message that never comes."


def run_mpi_checks(binary: str, ranks: int, tests: Optional[list] = None, *, time_limit_s=60.0,
                   tcp: bool = False, extra_args: Iterable[str] = (), env: Optional[dict] = None,
                   mpirun: Optional[str] = None, log=None, stall_s: Optional[float] = DEFAULT_STALL_S,
                   stop_at_failure: bool = False, start_limit_s: float = DEFAULT_START_LIMIT_S) -> list:
    """Runs the checks `tests` (default: all) of `binary` under mpirun with `ranks` processes,
    all in one job (a new job for the checks after one that hangs or crashes).

    time_limit_s bounds each check (not the whole run): a number or a function of the check's
    name. It counts from when every rank has started (its status record left state "starting":
    MPI_Init, the GPU's context and the communicator are not the check's time); start_limit_s
    bounds that start, and a job whose ranks do not all start within it fails every check it
    was to run with status "timeout" and a message naming the start. A check that exceeds it, or during which every rank is blocked in a
    communication call (or done) and none moves for stall_s seconds (a deadlock; None: wait
    for the time limit), is failed with status "timeout"; a rank that crashes fails the check
    it was in with "crashed". Returns one CheckResult per test, in run order. `log`, if given,
    receives mpirun's output (a writable text file).

    stop_at_failure (`./workbook mutate`): the job is stopped as soon as rank 0 reports a check
    that did not pass (or one hangs or crashes), and no new job runs the checks after it; the
    result holds the checks up to and including the first that failed (checks the job finished
    before it was stopped are left out)."""
    binary = os.path.abspath(binary)
    if tests is None:
        tests = list_tests(binary)
    limit = time_limit_s if callable(time_limit_s) else (lambda name: float(time_limit_s))
    remaining = list(tests)
    results = {}
    while remaining:
        status_dir = tempfile.mkdtemp(prefix="wb-mpi-")
        try:
            culprit_result = _run_once(binary, ranks, remaining, status_dir, limit, tcp, extra_args, env,
                                       mpirun, log, stall_s, stop_at_failure, start_limit_s)
            done = _read_results(status_dir)
        finally:
            shutil.rmtree(status_dir, ignore_errors=True)
        for name in list(remaining):
            if name in done:
                d = done[name]
                props = {k: v for k, v in d.items() if k not in ("name", "status", "time_ms", "message")}
                results[name] = CheckResult(name, ranks, tcp, d["status"], d.get("message", ""), props,
                                            float(d.get("time_ms", 0)) / 1000.0)
                remaining.remove(name)
        if not remaining:
            break
        if stop_at_failure and any(r.failed for r in results.values()):
            break  # stopped at a failed check: the checks after it are not run
        if culprit_result is None:
            culprit_result = ("error", "the job ended before this check reported a result", None)
        status, message, running = culprit_result
        if running == "*":  # the job could run no check at all
            for name in remaining:
                results[name] = CheckResult(name, ranks, tcp, status, message)
            break
        # The check the ranks were in stopped the job; without a record of it, the first one not
        # finished (GoogleTest runs checks in the binary's order).
        culprit = running if running in remaining else next(t for t in tests if t in remaining)
        results[culprit] = CheckResult(culprit, ranks, tcp, status, message)
        remaining.remove(culprit)  # every round settles at least this check: the loop ends
        if stop_at_failure:
            break
    ordered = [results[t] for t in tests if t in results]
    if stop_at_failure:  # checks that finished before the job was stopped are not reported
        first = next((i for i, r in enumerate(ordered) if r.failed), len(ordered))
        ordered = ordered[:first + 1]
    return ordered


def _stuck(st: dict) -> bool:
    """Every rank has started and is either done or blocked in a communication call, and at
    least one is not done: nothing can move unless a message is in flight."""
    if not st or any(s is None or s["progress"] is None for s in st.values()):
        return False
    waiting = [s for s in st.values() if s["state"] != "done"]
    return bool(waiting) and all(s["state"] == "running" and s["activity"].startswith("blocked in")
                                 for s in waiting)


def _starting(s: Optional[dict]) -> bool:
    """A rank that has not started yet: no status record (still in MPI_Init, or before it), or
    one in state "starting" (choosing its GPU, creating the communicator; comm/status.h)."""
    return s is None or s["state"] == "starting"


def _start_message(st: dict, ranks: int, start_limit_s: float) -> str:
    """Why a job's ranks did not all start within start_limit_s, naming those still starting."""
    lines = []
    for r, s in sorted(st.items()):
        if s is None:
            lines.append(f"rank {r}: not started: still in MPI_Init or before it (no status record)")
        elif s["state"] == "starting":
            where = f" (in {s['test']}, waiting for the process running the lab's code to start)" if s["test"] else \
                " (past MPI_Init: choosing its GPU, creating the communicator)"
            lines.append(f"rank {r}: starting{where}")
    started = ranks - len(lines)
    who = "the rank" if ranks == 1 else f"the {ranks} ranks"
    return (f"{who} did not finish starting within the start limit of {start_limit_s:g} s"
            f"{f' ({started} of them had)' if started else ''}, so no check could run; still starting:\n  " +
            "\n  ".join(lines) + "\n"
            "A rank's start (MPI_Init, its CUDA context on a GPU, the communicator) does not count against a check's "
            "time limit but has this limit of its own. Code of the lab that runs before the first check (a static "
            "constructor, a global object's initializer) would keep a rank starting; otherwise the machine was too "
            "busy to start the ranks: run fewer jobs beside this one, or raise the limit (--start-limit, or "
            "\"start_limit_s\" in the \"launch\" object of lab.json).")


def worker_of(binary: str) -> Optional[str]:
    """The worker of a split check binary (binary_worker: the lab's code; the binary itself holds
    the checks only, checker/support/remote/wb_comm_remote.h), or None for a binary that runs
    the lab's code in its own process."""
    worker = binary + "_worker"
    return worker if os.path.isfile(worker) and os.access(worker, os.X_OK) else None


def _sandbox_user() -> Optional[tuple]:
    """(uid, gid) the sandbox runs the lab's code as, when it switches user (as root)."""
    if os.environ.get("WB_SANDBOX") == "off" or os.geteuid() != 0:
        return None
    try:
        import pwd
        pw = pwd.getpwnam(os.environ.get("WB_SANDBOX_USER") or "nobody")
    except (ImportError, KeyError):
        return None
    return (pw.pw_uid, pw.pw_gid) if pw.pw_uid != 0 else None


def _start_workers(binary, worker, ranks, tcp, env, mpirun, status_dir, remote_dir, out):
    """Starts the workers' MPI job (the lab's code, one process per rank) inside the sandbox
    (wb_sandbox_run beside the binary): everything the judges' job holds (status_dir, the
    results, solutions/ and the build tree) is hidden from it; the sockets to the judges and the
    worker program stay visible."""
    user = _sandbox_user()
    if user:
        os.chown(remote_dir, *user)
    wenv = _mpi_env(remote_dir, env)
    wenv["WB_COMM_REMOTE_DIR"] = remote_dir
    hide = [p for p in wenv.get("WB_SANDBOX_HIDE", "").split(":") if p] + [status_dir]
    wenv["WB_SANDBOX_HIDE"] = ":".join(hide)
    wenv["WB_SANDBOX_SHARE"] = ":".join([remote_dir, os.path.realpath(worker)])
    wenv["WB_SANDBOX_LOOPBACK"] = "up"
    cmd = mpirun_command(worker, ranks, [], tcp=tcp, mpirun=mpirun)
    runner = os.path.join(os.path.dirname(binary), "wb_sandbox_run")
    if os.environ.get("WB_SANDBOX") != "off" and os.access(runner, os.X_OK):
        cmd = [runner, os.path.realpath(shutil.which(cmd[0]) or cmd[0])] + cmd[1:]
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=wenv,
                            cwd=remote_dir, **_own_process_group())


def _merge_statuses(judges: dict, workers: dict) -> dict:
    """A rank's state as one record: the judge's check and state, and while the judge waits for
    the lab's code, the worker's activity; progress counts both."""
    merged = {}
    for r, j in judges.items():
        w = workers.get(r)
        if j is not None and w is not None:
            j = dict(j)
            if j["activity"].startswith("waiting for the lab's code"):
                j["activity"] = w["activity"]
                if w["state"] == "starting":
                    j["state"] = "starting"  # the judge waits for its worker's start
            if j["progress"] is not None and w["progress"] is not None:
                j["progress"] = j["progress"] + w["progress"]
        elif j is not None and j["activity"].startswith("waiting for the lab's code"):
            # Its worker has no record yet: it is still in MPI_Init.
            j = dict(j, state="starting", activity="starting")
        merged[r] = j
    return merged


def _run_once(binary, ranks, tests, status_dir, limit, tcp, extra_args, env, mpirun, log, stall_s,
              stop_at_failure=False, start_limit_s=DEFAULT_START_LIMIT_S):
    """One mpirun job over `tests` (two for a split binary: its judges and their workers).
    Returns None when it ended normally, else (status, message, check) for the check that was
    running when it stopped (None when no rank recorded one)."""
    worker = worker_of(binary)
    if worker is None:
        return _run_job(binary, ranks, tests, status_dir, limit, tcp, extra_args, env, mpirun, log, stall_s,
                        stop_at_failure=stop_at_failure, start_limit_s=start_limit_s)
    remote_dir = tempfile.mkdtemp(prefix="wb-mpi-lab-")
    try:
        return _run_job(binary, ranks, tests, status_dir, limit, tcp, extra_args, env, mpirun, log, stall_s,
                        worker=worker, remote_dir=remote_dir, stop_at_failure=stop_at_failure,
                        start_limit_s=start_limit_s)
    finally:
        shutil.rmtree(remote_dir, ignore_errors=True)


def _failure_reported(status_dir: str) -> bool:
    """True once rank 0 has reported a check that neither passed nor was skipped."""
    return any(d.get("status") not in ("passed", "skipped") for d in _read_results(status_dir).values())


def _run_job(binary, ranks, tests, status_dir, limit, tcp, extra_args, env, mpirun, log, stall_s, worker=None,
             remote_dir=None, stop_at_failure=False, start_limit_s=DEFAULT_START_LIMIT_S):
    args = ["--gtest_filter=" + ":".join(tests), "--gtest_color=no"] + list(extra_args)
    cmd = mpirun_command(binary, ranks, args, tcp=tcp, mpirun=mpirun)
    out_path = os.path.join(status_dir, "mpirun.out")
    judge_env = _mpi_env(status_dir, env)
    if worker:
        judge_env["WB_COMM_REMOTE_DIR"] = remote_dir
    with open(out_path, "w+") as out, tempfile.TemporaryFile("w+") as wout:
        wproc = _start_workers(binary, worker, ranks, tcp, env, mpirun, status_dir, remote_dir, wout) \
            if worker else None
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=judge_env, cwd=status_dir, **_own_process_group())
        except BaseException:
            if wproc:
                _kill_job(wproc, remote_dir, ranks, worker)
            raise
        try:
            return _watch_job(binary, ranks, tests, status_dir, limit, tcp, log, stall_s, worker, remote_dir,
                              stop_at_failure, proc, wproc, out, wout, start_limit_s)
        except BaseException:
            # Interrupted (Ctrl-C) or failed while watching: the jobs run in their own process
            # groups, so nothing else would stop them.
            _kill_job(proc, status_dir, ranks, binary)
            if wproc:
                _kill_job(wproc, remote_dir, ranks, worker)
            raise


def _watch_job(binary, ranks, tests, status_dir, limit, tcp, log, stall_s, worker, remote_dir, stop_at_failure,
               proc, wproc, out, wout, start_limit_s=DEFAULT_START_LIMIT_S):
    """Waits for the job(s) started by _run_job, stops them on a time limit, a deadlock, a slow
    start, a flood of output or (stop_at_failure) a failed check, and says how they ended."""
    last = {}  # rank -> (test, time it started)
    start = time.monotonic()
    timed_out = stalled = flooded = stopped = start_timed_out = False
    # When every rank had started (None while one is still starting): a check's time counts from
    # then at the earliest, since a rank that has started may be waiting for one that has not.
    started_at = None
    workers_gone = None  # when the workers' job ended while the judges still ran
    over_limit = 0.0
    snapshot, still_since = None, start
    results_path, results_size = os.path.join(status_dir, "results.jsonl"), 0
    while proc.poll() is None:
        time.sleep(0.1)
        now = time.monotonic()
        if stop_at_failure:
            try:
                size = os.stat(results_path).st_size
            except OSError:
                size = 0
            if size != results_size:
                results_size = size
                if _failure_reported(status_dir):
                    stopped = True
                    break
        st = _statuses(status_dir, ranks)
        if worker:
            st = _merge_statuses(st, _statuses(remote_dir, ranks))
            if wproc.poll() is not None:
                workers_gone = workers_gone or now
                if now - workers_gone > 5.0:  # the judges should have noticed at once
                    break
        for r, s in st.items():
            if s is None:
                continue
            if s["state"] == "done":
                last.pop(r, None)
                continue
            if r not in last or last[r][0] != s["test"]:
                last[r] = (s["test"], now)
        if any(_starting(s) for s in st.values()):
            started_at = None  # still starting: no check's time runs, the start's does
            if now - start > start_limit_s:
                start_timed_out = True
                break
        else:
            started_at = started_at or now
            running = [(max(t0, started_at), test) for (test, t0) in last.values()]
            oldest, test = min(running) if running else (started_at, tests[0])
            over_limit = limit(test) if test in tests else limit(tests[0])
            if now - oldest > over_limit:
                timed_out = True
                break
        if os.fstat(out.fileno()).st_size + (os.fstat(wout.fileno()).st_size if worker else 0) > MAX_OUTPUT_BYTES:
            flooded = True
            break
        key = tuple(sorted((r, s["progress"], s["state"], s["test"]) for r, s in st.items() if s))
        if not _stuck(st) or key != snapshot:
            snapshot, still_since = key, now
        elif stall_s is not None and now - still_since > stall_s:
            timed_out = stalled = True
            break
    final = _statuses(status_dir, ranks)
    pids = _pids(status_dir, ranks)
    survivors = []
    if timed_out or start_timed_out or flooded or proc.poll() is None:
        survivors = _kill_job(proc, status_dir, ranks, binary)
    else:
        # mpirun has exited; make sure no rank lingers.
        survivors = _kill_job(proc, status_dir, ranks, binary) if any(
            _alive(p, binary) for p in _pids(status_dir, ranks).values()) else []
    worker_text, worker_final, worker_pids = "", {}, {}
    if worker:
        worker_final = _statuses(remote_dir, ranks)
        final = _merge_statuses(final, worker_final)
        worker_pids = _pids(remote_dir, ranks)
        # The judges have let their workers go: give them a moment to finish MPI.
        try:
            # After a crash, mpirun reports the rank that ended it before it exits.
            wproc.wait(timeout=0.5 if timed_out or start_timed_out or stopped else 5.0)
        except subprocess.TimeoutExpired:
            pass
        wout.seek(0)
        worker_text = wout.read(MAX_OUTPUT_BYTES)
        if "own PID namespace" in worker_text.split("wb_sandbox_run: protections:", 1)[-1].split("\n", 1)[0]:
            # Its pids are the namespace's; when the sandbox's first process is gone, so is
            # every process in it.
            survivors += _kill_job(wproc, remote_dir, 0, worker)
        else:
            survivors += _kill_job(wproc, remote_dir, ranks, worker)
        worker_text = "\n".join(l for l in worker_text.splitlines()
                                if not l.startswith("wb_sandbox_run: protections:"))
    out.seek(0)
    text = out.read(MAX_OUTPUT_BYTES)
    if log is not None:
        log.write(text + worker_text)
    if survivors:
        raise RuntimeError(f"processes {survivors} of {binary} survived SIGKILL; kill them by hand")
    if stopped:
        return None  # stopped on purpose after a failed check, which results.jsonl holds
    unfinished = [s["test"] for s in final.values() if s and s["state"] != "done" and s["test"] in tests]
    running = min(unfinished, key=tests.index) if unfinished else None
    if flooded:
        where = "".join(f"\n  rank {r} was in {s['test']}" for r, s in sorted(final.items()) if s and s["test"])
        return ("error", f"the job printed more than {MAX_OUTPUT_BYTES // (1024 * 1024)} MiB of output and was "
                         "stopped. Is there a print in a loop? Remove debugging output before checking." + where,
                running)
    if start_timed_out:
        # The job never started: every check it was to run fails the same way ("*"), rather than
        # each costing another start limit in a new job.
        return ("timeout", _start_message(final, ranks, start_limit_s), "*")
    if timed_out:
        lines = _describe_ranks(final)
        first = (f"stopped after {stall_s:g} s in which no rank made progress, with {ranks} ranks (the time limit "
                 f"is {over_limit:g} s)" if stalled else f"timed out after {over_limit:g} s with {ranks} ranks")
        return ("timeout", first + "; ranks that did not finish:\n  " + "\n  ".join(lines) + "\n" +
                _deadlock_hint(final), running)
    if proc.returncode == 0 and workers_gone is None:
        return None
    # Abnormal end: name the rank, and where in the code it crashed. For a split binary the
    # lab's code ran in the workers: their job's output says how a rank ended.
    culprits = []
    symbolized = False
    crash_text, crash_pids = (worker_text, worker_pids) if worker else (text, pids)
    for m in _SIGNAL_RE.finditer(crash_text):
        r = int(m.group(1))
        s = final.get(r)
        where = f" in {s['test']}" if s and s["test"] else ""
        if s and s["test"] and s["activity"] and s["activity"] != "running" \
                and not s["activity"].startswith("waiting for the lab's code"):
            where += f" while {s['activity']}"
        frames = symbolize.mpi_rank_backtrace(crash_text, crash_pids[r]) if r in crash_pids else []
        symbolized = symbolized or bool(frames)
        culprits.append(f"rank {r} crashed with signal {m.group(2)} ({symbolize.signal_meaning(int(m.group(2))) or m.group(3)})"
                        f"{where}{symbolize.describe(frames)}")
    if worker and workers_gone is not None and not any(final.values()):
        # No judge got past waiting for its worker: every remaining check fails the same way.
        return ("crashed", f"the processes running the lab's code exited (their job's status: {wproc.returncode}) "
                           "before the first check could call them, without returning to the checker: does the "
                           "lab's code call exit() or _exit() in a static constructor, or end the program before "
                           "main() runs?" + ("\nlast output:\n" + worker_text.strip()[-2000:] if worker_text.strip()
                                              else ""), "*")
    if worker and not culprits:
        for m in _IMPROPER_RE.finditer(worker_text):
            r = int(m.group(1))
            s = final.get(r)
            where = f" in {s['test']}" if s and s["test"] else ""
            culprits.append(f"rank {r}: the process running the lab's code exited{where} without returning to the "
                            "checker (exit() or a return from main in the lab's code?)")
    if not culprits or not worker:
        for r, s in sorted(final.items()):
            if s and s["state"].startswith("error: "):
                culprits.append(f"rank {r} stopped with an error in {s['test']}: {s['state'][7:]}")
                if worker:
                    break  # every judge says the same once the workers' job is gone
    if not culprits:
        for m in _EXIT_RE.finditer(crash_text):
            culprits.append(f"rank {m.group(1)} exited with code {m.group(2)}")
    if not culprits:
        culprits = [f"mpirun exited with code {proc.returncode}"] + _describe_ranks(final)
    text = text + ("\n" + worker_text if worker else "")
    shown = symbolize.without_reports(_without_banners(text)) if symbolized else _without_banners(text)
    tail = "\n".join(l for l in shown.splitlines()[-15:] if l.strip() and not _GTEST_PROGRESS_RE.match(l))
    return ("crashed", "\n".join(culprits) + ("\nlast output:\n" + tail if tail else ""), running)


_BANNER_RULE = re.compile(r"^-{20,}\s*$")


def _without_banners(text: str) -> str:
    """mpirun's output without Open MPI's framed notices ("Primary job terminated normally,
    but 1 process returned a non-zero exit code ...", "mpirun detected that one or more
    processes exited ..."): the culprit lines above already say which rank and how."""
    out, inside = [], False
    for line in text.splitlines():
        if _BANNER_RULE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("binary")
    p.add_argument("--ranks", default=",".join(map(str, DEFAULT_RANKS)), help="comma-separated rank counts")
    p.add_argument("--tcp", action="store_true", help="restrict MPI to TCP on loopback")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per check")
    p.add_argument("--stall", type=float, default=DEFAULT_STALL_S,
                   help="seconds every rank may stay blocked with no call completing before the check is "
                        "stopped as a deadlock (0: wait for the time limit)")
    p.add_argument("--start-limit", type=float, default=DEFAULT_START_LIMIT_S,
                   help="seconds the ranks may take to start (MPI_Init, CUDA contexts, the communicator), "
                        "not counted in --time-limit")
    p.add_argument("--filter", default="*", help="glob(s) of checks to run, ':'-separated")
    p.add_argument("--exclude", default="", help="glob(s) of checks not to run, ':'-separated")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--verbose", action="store_true", help="print mpirun's output")
    a = p.parse_args(argv)
    tests = [t for t in list_tests(a.binary) if any(fnmatch.fnmatchcase(t, g) for g in a.filter.split(":"))
             and not any(fnmatch.fnmatchcase(t, g) for g in a.exclude.split(":") if g)]
    results = []
    for n in [int(x) for x in a.ranks.split(",") if x]:
        results += run_mpi_checks(a.binary, n, tests, time_limit_s=a.time_limit, tcp=a.tcp,
                                  log=sys.stdout if a.verbose else None, stall_s=a.stall or None,
                                  start_limit_s=a.start_limit)
    for r in results:
        print(f"{r.status.upper():8} {r.label}  {r.properties.get('measured', '')}")
        if r.status not in ("passed", "skipped") and r.message:
            print("    " + r.message.replace("\n", "\n    "))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([dataclasses.asdict(r) for r in results], f, indent=1)
    return 0 if all(r.status in ("passed", "skipped") for r in results) else 1


if __name__ == "__main__":
    sys.exit(_main())
