"""Runs the checks of a check binary, each in its own process, with a time limit.

A check binary is a GoogleTest executable. For each test the runner starts a child
process in a new session (`--gtest_filter=Suite.Name --gtest_output=json:FILE`), so that
a crash, a hang or a sticky CUDA error in one check cannot affect another. On time-out
the whole process group is killed. The outcome of each check comes from GoogleTest's
JSON output, its exit status and the tail of its stderr (where device fault reports go).

How a check process is started is a *launcher*, chosen by the lab's "launch" metadata
(lab.json). The built-in "direct" launcher runs the binary itself; other kinds register a
launcher with register_launcher(), or a runner for the whole lab with register_lab_runner()
(the collective labs: one mpirun job per rank count, checker/wbcheck/collectives.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import symbolize  # checker/symbolize.py (checker/ is on sys.path, as for mpi_launch)

from . import sandbox as _sandbox
from .labs import Lab

PASSED, FAILED, NOT_MEASURED = "passed", "failed", "not_measured"
STDERR_LINES = 15          # stderr lines quoted in a failed check's output
KEEP_BYTES = 64 * 1024     # per stream: the tail kept in memory (output can be endless)
MAX_OUTPUT_BYTES = 8 * 1024 * 1024   # a check that prints more is stopped (a print in a loop)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a time limit such as `timeout`, a job scheduler) while checks run: handled as
    Ctrl-C is, so every running check's process group is killed and what finished is reported."""


class Interrupted(Exception):
    """The run was stopped (Ctrl-C or SIGTERM) inside a lab. The rows that finished were already
    given to on_result; @p rows are the ones not finished, each failed with what was running
    and for how long."""

    def __init__(self, rows: list, terminated: bool):
        super().__init__("; ".join(r.name for r in rows))
        self.rows = rows
        self.terminated = terminated


def interrupted_row(lab: Lab, name: str, seconds: float, terminated: bool, detail: str | None = None) -> "CheckResult":
    """The row of a check that was running (or due) when the run was stopped; @p detail says where
    it was (default: that it had run @p seconds)."""
    how = "by SIGTERM (a time limit around the run, such as `timeout`)" if terminated else "by Ctrl-C"
    where = detail if detail is not None else f" after this check had run {seconds:.0f} s"
    return CheckResult(lab=lab.id, name=name, status=FAILED, weight=lab.spec(name).weight,
                       message=f"not finished: the run was stopped {how}{where}. Its result is unknown: run the "
                               f"lab again with time to finish (./workbook check {lab.number})",
                       duration_s=seconds)


@dataclass
class CheckResult:
    lab: str                       # "01-saxpy"
    name: str                      # "Correctness.SaxpySmallSizes" (+ launcher suffix)
    status: str                    # passed | failed | not_measured
    weight: float = 1.0
    measured: str = ""
    threshold: str = ""
    message: str = ""              # why it failed, or why it was not measured
    hint: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict:
        return dict(self.__dict__)


# ---- launchers ---------------------------------------------------------------------------

@dataclass
class Invocation:
    """One child process for one check: its command line and where its JSON lands."""
    argv: list[str]
    json_path: Path
    suffix: str = ""               # appended to the check name, e.g. " [4 ranks]"
    env: dict = field(default_factory=dict)   # extra environment variables
    # Called as after(result, outcome) once the result is interpreted: a launcher may clean
    # up and explain what happened (e.g. which MPI rank hung or crashed).
    after: Callable | None = None


# launcher(lab, binary, gtest_args, workdir) -> invocations. gtest_args already holds the
# filter; a launcher adds the JSON output flag for each invocation it makes.
Launcher = Callable[[Lab, Path, list, Path], list]


JSON_FD = "{json_fd}"   # in an argv: replaced by the write end of the runner's report pipe


def direct_launcher(lab: Lab, binary: Path, gtest_args: list, workdir: Path) -> list:
    # The report comes through a pipe only the runner reads, never a file the lab's code could
    # write; json_path only names the request (run_process keeps the report in memory).
    json_path = workdir / "result.json"
    return [Invocation(argv=[str(binary), *gtest_args, f"--gtest_output=json:/dev/fd/{JSON_FD}"],
                       json_path=json_path)]


LAUNCHERS: dict[str, Launcher] = {"direct": direct_launcher}


# A launch kind may instead take over a whole lab: lab_runner(lab, binary, checks=...,
# timeout_s=..., on_result=..., on_progress=...) -> list of CheckResult, used in place of the
# per-check loop below (the collective labs: one mpirun job per rank count running every
# check, checker/wbcheck/collectives.py, which registers kind "mpi").
LabRunner = Callable[..., list]
LAB_RUNNERS: dict[str, LabRunner] = {}


def register_launcher(kind: str, launcher: Launcher) -> None:
    """Makes `"launch": {"kind": kind, ...}` in lab.json start each check with @p launcher."""
    LAUNCHERS[kind] = launcher


def register_lab_runner(kind: str, lab_runner: LabRunner) -> None:
    """Makes `"launch": {"kind": kind, ...}` in lab.json run the whole lab with @p lab_runner."""
    LAB_RUNNERS[kind] = lab_runner


# ---- child processes ---------------------------------------------------------------------

@dataclass
class ProcessOutcome:
    returncode: int | None
    timed_out: bool
    stdout: str
    stderr: str
    duration_s: float
    output_exceeded: bool = False   # stopped for printing more than MAX_OUTPUT_BYTES
    report: bytes | None = None     # what came through the report pipe (None: no pipe was used)


class _TailReader(threading.Thread):
    """Drains a pipe, keeping the first and last KEEP_BYTES bytes."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.total = 0

    def run(self):
        while True:
            chunk = self.stream.read(65536)
            if not chunk:
                break
            self.total += len(chunk)
            if len(self.head) < KEEP_BYTES:
                take = KEEP_BYTES - len(self.head)
                self.head += chunk[:take]
                chunk = chunk[take:]
            self.tail += chunk
            if len(self.tail) > KEEP_BYTES:
                self.dropped += len(self.tail) - KEEP_BYTES
                del self.tail[:len(self.tail) - KEEP_BYTES]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output skipped ...]\n".encode() if self.dropped else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _ReportReader(threading.Thread):
    """Drains the report pipe, up to MAX_REPORT_BYTES (a report is a few KiB)."""
    MAX_REPORT_BYTES = 16 * 1024 * 1024

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd = fd
        self.data = bytearray()

    def run(self):
        with os.fdopen(self.fd, "rb", buffering=0) as f:
            while True:
                chunk = f.read(65536)
                if not chunk:
                    break
                if len(self.data) < self.MAX_REPORT_BYTES:
                    self.data += chunk[:self.MAX_REPORT_BYTES - len(self.data)]


def run_process(argv: list[str], timeout_s: float, env: dict | None = None, cwd: Path | None = None,
                report_pipe: bool = False) -> ProcessOutcome:
    """Runs @p argv in its own session; kills its whole process group on time-out (and
    after it exits, so no stray child survives). Never raises for the child's failures.
    With @p report_pipe, "{json_fd}" in argv becomes the write end of a pipe, and what the
    process wrote to it (and nothing else) is the outcome's report; no file is involved."""
    start = time.monotonic()
    report_reader = None
    pass_fds = ()
    if report_pipe:
        rfd, wfd = os.pipe()
        argv = [a.replace(JSON_FD, str(wfd)) for a in argv]
        pass_fds = (wfd,)
        report_reader = _ReportReader(rfd)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, env=env, cwd=cwd,
                                pass_fds=pass_fds)
    except OSError as e:
        if report_reader is not None:
            os.close(pass_fds[0])
            os.close(report_reader.fd)
        return ProcessOutcome(returncode=127, timed_out=False, stdout="",
                              stderr=f"cannot start {argv[0]}: {e}", duration_s=0.0)
    if report_reader is not None:
        os.close(pass_fds[0])
        report_reader.start()
    readers = [_TailReader(proc.stdout), _TailReader(proc.stderr)]
    for r in readers:
        r.start()
    timed_out = False
    output_exceeded = False
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                proc.wait(timeout=min(0.25, max(0.0, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if sum(r.total for r in readers) > MAX_OUTPUT_BYTES:
                    output_exceeded = True
                    break
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
    finally:
        _kill_group(proc.pid)
        proc.wait()
    _sandbox.sweep()
    for r in readers:
        r.join(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    report = None
    if report_reader is not None:
        report_reader.join(timeout=5)
        report = bytes(report_reader.data)
    return ProcessOutcome(returncode=proc.returncode, timed_out=timed_out, stdout=readers[0].text(),
                          stderr=readers[1].text(), duration_s=time.monotonic() - start,
                          output_exceeded=output_exceeded, report=report)


# ---- listing and interpreting --------------------------------------------------------------

class BinaryError(Exception):
    """A check binary that cannot even list its checks."""


def list_checks(binary: Path, timeout_s: float = 60.0) -> list[str]:
    """The binary's GoogleTest tests as "Suite.Name" (disabled tests excluded)."""
    out = run_process([str(binary), "--gtest_list_tests"], timeout_s)
    if out.timed_out or out.returncode != 0:
        why = "timed out" if out.timed_out else describe_exit(out.returncode)
        raise BinaryError(f"{binary.name} --gtest_list_tests {why}\n{tail_lines(out.stderr)}".rstrip())
    names, suite = [], None
    for line in out.stdout.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip().rstrip(".")
        elif suite:
            test = line.split("#")[0].strip()
            if not suite.startswith("DISABLED_") and not test.startswith("DISABLED_"):
                names.append(f"{suite}.{test}")
    # The check groups in their order, whatever order the lab's check files were linked in
    # (GoogleTest lists a suite where its first test was registered); within a group, the
    # binary's order. Other suites follow.
    groups = ("Correctness", "Analysis", "Performance")
    rank = {g: i for i, g in enumerate(groups)}
    return sorted(names, key=lambda n: rank.get(n.split(".", 1)[0], len(groups)))


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "did not finish"
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        meaning = symbolize.signal_meaning(sig)
        return f"crashed with {name}" + (f" ({meaning})" if meaning else "")
    return f"exited with status {returncode}"


def tail_lines(text: str, n: int = STDERR_LINES) -> str:
    lines = [l for l in text.rstrip().splitlines() if l.strip()]
    return "\n".join(lines[-n:])


_LOCATION = re.compile(r"^(?:.*?:\d+|unknown file)$")


def clean_failure(text: str) -> str:
    """GoogleTest failure text without its "file:line" and "Failed" lines."""
    lines = text.splitlines()
    if lines and _LOCATION.match(lines[0].strip()):
        lines = lines[1:]
    if lines and lines[0].strip() == "Failed":
        lines = lines[1:]
    msg = "\n".join(lines).strip()
    exc = re.match(r'C\+\+ exception with description "(.*)" thrown in the test body\.?$', msg, re.S)
    if exc and (exc.group(1).startswith("the process running the lab's code")
                or re.match(r"\w+\(\): returned while work it started was still running", exc.group(1))):
        # The judge lost its worker, or the worker found work a call left running
        # (checker/support/remote): the text says what happened.
        msg = exc.group(1)
    elif exc:
        msg = f"the check stopped on an exception: {exc.group(1)}"
    return msg


def _skip_reason(stdout: str) -> str:
    # GoogleTest's JSON omits the skip message; its console output has it.
    m = re.search(r"Skipped\n(.*?)\n\[  SKIPPED \]", stdout, re.S)
    return m.group(1).strip() if m else ""


def _find_test(data: dict, suite: str, name: str) -> dict | None:
    for s in data.get("testsuites", []):
        if s.get("name") != suite:
            continue
        for t in s.get("testsuite", []):
            if t.get("name") == name:
                return t
    return None


def _lab_crash(stderr: str, binary: Path | None) -> tuple[str, str, bool]:
    """Where the process running the lab's code crashed (" at FILE:LINE in FUNCTION" and its
    backtrace), from the report its crash handler (checker/support/crash_report.h) left in
    stderr: the worker of a split check binary, or the check process itself when the checks run
    in the lab's process (cuda). Returns that, stderr without the report, and whether the place
    is in the lab's code (not the checks' or the harness's); ("", stderr, False) when there is
    no report or it cannot be resolved."""
    if symbolize.WORKER_BEGIN not in stderr:
        return "", stderr, False
    exe = None
    if binary is not None:
        worker = Path(str(binary) + "_worker")
        exe = str(worker if worker.is_file() else binary)
    frames = symbolize.worker_backtrace(stderr, exe)
    where = symbolize.describe(frames)
    if not where:
        return "", stderr, False
    return where, symbolize.without_reports(stderr), any(f.in_lab_code for f in frames)


_REPORT_HEAD = re.compile(r"^========= (\S.*)$")
_REPORT_MORE = re.compile(r"^=========     (.*)$")
_NOT_AN_ERROR = ("cusim:", "ERROR SUMMARY", "LEAK SUMMARY", "Leaked ")


def first_device_report(stderr: str) -> tuple[str, str] | None:
    """The first error that cusim's analysis (memcheck, racecheck, synccheck, initcheck) or a device
    fault reported in @p stderr, as (its lines without the hint, its hint); None if there is none."""
    lines, hint, inside = [], "", False
    for line in stderr.splitlines():
        head, more = _REPORT_HEAD.match(line), _REPORT_MORE.match(line)
        if head and not more:
            if inside:
                break
            if head.group(1).startswith(_NOT_AN_ERROR):
                continue
            inside = True
            lines.append(head.group(1))
        elif more and inside:
            text = more.group(1).strip()
            if text.startswith("Hint: "):
                hint = text[len("Hint: "):]
            else:
                lines.append("  " + text)
        elif inside:
            break
    if not lines:
        return None
    return "\n".join(l.replace(symbolize.ROOT + os.sep, "") for l in lines), hint


# "not implemented yet: sgemm in labs/05-gemm/gemm.cu" (a CUDA lab's skeleton returns
# cudaErrorNotYetImplemented) or "labs/10-ring-allreduce/ring_allreduce.cpp:42: not implemented yet:
# ring_allreduce" (a collective lab's skeleton throws comm::NotImplemented).
_UNFINISHED = (re.compile(r"not implemented yet: (?P<fn>\w+)(?:\(\))? in \S*?(?P<path>(?:labs|solutions)/(?P<nn>\d\d)-[\w-]+/"
                          r"[\w.]+)"),
               re.compile(r"\S*?(?P<path>(?:labs|solutions)/(?P<nn>\d\d)-[\w-]+/[\w.]+):\d+: not implemented yet: "
                          r"(?P<fn>\w+)"))


def unfinished_earlier_lab(lab_id: str, message: str) -> tuple[str, str, str] | None:
    """(lab number, function, file) when @p message says that a function of another lab than
    @p lab_id is not implemented yet (a later lab calls an earlier lab's code); else None."""
    for pattern in _UNFINISHED:
        m = pattern.search(message or "")
        if m and m.group("nn") != lab_id[:2]:
            return m.group("nn"), m.group("fn"), m.group("path")
    return None


def name_earlier_lab(lab_id: str, result: CheckResult) -> CheckResult:
    """A failure that comes from an earlier lab's unfinished function says so in its first line,
    and its hint is to finish that lab (the check's own hint is about this lab's code)."""
    if result.status != FAILED:
        return result
    found = unfinished_earlier_lab(lab_id, result.message)
    if found:
        nn, fn, path = found
        result.message = (f"needs lab {nn} first: {fn}() in {path} is not implemented yet, and lab {lab_id[:2]} "
                          f"calls it.\n{result.message}")
        result.hint = (f"Finish lab {nn}'s {fn}() ({path}; ./workbook check {nn} checks it), then run this lab "
                       "again.")
    return result


def interpret(lab: Lab, check: str, outcome: ProcessOutcome, json_path: Path, timeout_s: float,
              binary: Path | None = None) -> CheckResult:
    """Turns one check process (of @p binary) into a CheckResult."""
    return name_earlier_lab(lab.id, _interpret(lab, check, outcome, json_path, timeout_s, binary))


def _interpret(lab: Lab, check: str, outcome: ProcessOutcome, json_path: Path, timeout_s: float,
               binary: Path | None = None) -> CheckResult:
    spec = lab.spec(check)
    result = CheckResult(lab=lab.id, name=check, status=FAILED, weight=spec.weight, hint=spec.hint,
                         duration_s=outcome.duration_s)
    record = None
    if outcome.report is not None or json_path.is_file():
        try:
            suite, name = check.split(".", 1)
            text = (outcome.report.decode(errors="replace") if outcome.report is not None
                    else json_path.read_text(errors="replace"))  # piped reports never touch a file
            record = _find_test(json.loads(text), suite, name) if text else None
        except (json.JSONDecodeError, OSError, ValueError):
            record = None
    if record:
        result.measured = str(record.get("measured", ""))
        result.threshold = str(record.get("threshold", ""))
        result.hint = "" if record.get("no_hint") else str(record.get("hint", "")) or result.hint
    if spec.passes:
        result.threshold = spec.passes  # the declaration's, whatever the process recorded
    crash_site, stderr_text, in_lab_code = _lab_crash(outcome.stderr, binary)
    stderr = tail_lines(stderr_text)

    if outcome.output_exceeded:
        result.message = (f"the check printed more than {MAX_OUTPUT_BYTES // (1024 * 1024)} MiB of output and was "
                          "stopped. Is there a printf in a loop, or in a kernel run by every thread? Remove "
                          "debugging output before checking.")
        result.stderr_tail = stderr
        return result
    if outcome.timed_out:
        result.message = (f"time limit of {timeout_s:g} s exceeded — a hang or deadlock? The check was stopped. "
                          "Look for a loop whose index never reaches its bound, a __syncthreads() or "
                          "warp shuffle that not every thread reaches, or a receive without a matching send.")
        result.stderr_tail = stderr
        return result
    if record is None:
        if outcome.returncode is not None and outcome.returncode < 0 and crash_site:
            # The lab's code ran in this process (cuda): located as a split binary's worker is.
            where = "The lab's code crashed" if in_lab_code else "It crashed"
            result.message = (f"the check process {describe_exit(outcome.returncode)}. {where}{crash_site}\n"
                              "The device or sanitizer report, if any, is below.")
        elif outcome.returncode is not None and outcome.returncode < 0:
            result.message = (f"the check process {describe_exit(outcome.returncode)}. The fault is in "
                              "code the check called; the device or sanitizer report, if any, is below.")
        else:
            result.message = (f"the check process {describe_exit(outcome.returncode)} before reporting a result: "
                              "something it ran ended the process (exit(), quick_exit() or an abort in code the "
                              "check called). The output below may say where.")
        result.stderr_tail = stderr
        return result

    failures = [clean_failure(f.get("failure", "")) for f in record.get("failures", [])]
    if failures:
        result.message = "\n".join(f for f in failures if f)
        if crash_site:
            result.message += "\nThe lab's code crashed" + crash_site
        report = first_device_report(outcome.stderr)
        if report and report[0].splitlines()[0] not in result.message:
            # A race, an out-of-bounds access or a barrier error explains most wrong results that
            # come with it: it leads, and its advice comes before the check's own.
            result.message = (f"cusim reported an error while this check ran; fix it first, it is the likely "
                              f"cause of the failure below:\n{report[0]}\n{result.message}")
            if report[1]:
                result.hint = (report[1] + (f" If the check still fails after that: {result.hint}" if result.hint
                                            else ""))
        result.stderr_tail = stderr
    elif record.get("result") == "SKIPPED":
        # A check that cannot measure on this backend (WB_NOT_MEASURED): never a pass.
        result.status = NOT_MEASURED
        reason = _skip_reason(outcome.stdout)
        if not reason and record.get("not_measured"):
            reason = f"not measured: {record['not_measured']}"
        if not reason.startswith("not measured"):
            reason = "not measured: " + (reason or "the check was skipped")
        result.message = reason
    elif outcome.returncode != 0:
        result.message = (f"the check passed, but its process then {describe_exit(outcome.returncode)} "
                          "(a crash or error after the check, e.g. while freeing memory).")
        result.stderr_tail = stderr
    else:
        result.status = PASSED
    return result


def run_lab_checks(lab: Lab, binary: Path, checks: list[str] | None = None, timeout_s: float | None = None,
                   on_result: Callable[[CheckResult], None] | None = None,
                   on_progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Runs every check of @p binary (or only @p checks), each in its own process.
    @p on_progress receives a short text as each check (or job) starts."""
    kind = lab.launch.get("kind", "direct")
    if kind in LAB_RUNNERS:
        return LAB_RUNNERS[kind](lab, binary, checks=checks, timeout_s=timeout_s, on_result=on_result,
                                 on_progress=on_progress)
    launcher = LAUNCHERS.get(kind)
    if launcher is None:
        raise BinaryError(f"lab {lab.id}: unknown launch kind '{kind}' in lab.json (known: "
                          f"{', '.join(sorted(set(LAUNCHERS) | set(LAB_RUNNERS)))})")
    names = checks if checks is not None else list_checks(binary)
    results = []
    for check in names:
        if on_progress:
            on_progress(check)
        limit = timeout_s if timeout_s is not None else lab.timeout_for(check)
        started = time.monotonic()
        try:
            _run_direct_check(lab, binary, check, limit, launcher, results, on_result)
        except KeyboardInterrupt as e:  # run_process has killed the check's process group
            raise Interrupted([interrupted_row(lab, check, time.monotonic() - started,
                                               isinstance(e, Terminated))],
                              isinstance(e, Terminated)) from None
    return results


def _run_direct_check(lab, binary, check, limit, launcher, results, on_result) -> None:
    """One check through the lab's launcher (one process per invocation): its results."""
    with tempfile.TemporaryDirectory(prefix="wbcheck-") as tmp:
        workdir = Path(tmp)
        gtest_args = [f"--gtest_filter={check}", "--gtest_color=no"]
        for inv in launcher(lab, binary, gtest_args, workdir):
            env = dict(os.environ, **inv.env) if inv.env else None
            piped = any(JSON_FD in a for a in inv.argv)
            outcome = run_process(inv.argv, limit, env=env, report_pipe=piped)
            result = interpret(lab, check, outcome, inv.json_path, limit, binary)
            if inv.after:
                inv.after(result, outcome)
            result.name += inv.suffix
            results.append(result)
            if on_result:
                on_result(result)
