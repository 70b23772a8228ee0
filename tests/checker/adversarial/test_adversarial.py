#!/usr/bin/env python3
"""Runs one adversarial lab 01 submission (tests/checker/adversarial/<attack>.cu) through the
workbook's runner exactly as `./workbook check` does (checker/wbcheck/cli.py, cmd_check) and
asserts that the attack is contained.

  test_adversarial.py BINARY TEST [--allow-not-measured]

BINARY is checker_adversarial_<attack> (a judge; BINARY_worker holds the attack); TEST names
what to assert (usually the attack's name; some attacks serve several tests). An assertion that
needs a sandbox protection this machine lacks (wb_sandbox_probe says which hold) is reported as
SKIPPED with the reason. Exit status: 0 passed, 1 failed, 77 skipped (ctest SKIP_RETURN_CODE).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import labs, report, runner, sandbox  # noqa: E402

LAB = "01-saxpy"
BACKEND = "sim"  # the backend of the build the binary is in (main() reads its CMakeCache.txt)
ALL_CHECKS = None  # every check of the binary
# Correctness checks that take well under a second each on the CPU (not SaxpyLargeSizes).
FAST_CORRECTNESS = ["Correctness.SaxpySmallSizes", "Correctness.SaxpyZeroSize", "Correctness.GridStrideLargeGrids",
                    "Correctness.HostRoundTrip"]
FILL_PREFIX = "wb-adv-fill-"
# What lab functions that compute nothing and return cudaSuccess rightly pass.
DO_NOTHING_PASSES = ["Correctness.SaxpyZeroSize", "Correctness.HostNegativeSize"]

# Protections as wb_sandbox_probe names them (checker/support/remote/sandbox.cpp).
NETWORK = "no network"
HIDDEN = "solutions, build and results hidden"
READ_ONLY = "read-only source tree"


class Test:
    def __init__(self, binary: Path, name: str, allow_not_measured: bool):
        self.binary = binary.resolve()
        self.name = name
        self.allow_not_measured = allow_not_measured
        self.build_dir = self.binary.parent.parent          # build/sim, or a cuda build split with WB_CUDA_SPLIT
        global BACKEND
        cache = self.build_dir / "CMakeCache.txt"
        if cache.exists() and "WB_BACKEND:STRING=cuda" in cache.read_text(errors="replace"):
            BACKEND = "cuda"
        self.lab = labs.select_labs([LAB])[0]
        self.failures: list[str] = []
        self.skipped: list[str] = []
        self.checked = 0
        self.probe: dict = {}

    # ---- setup, as cli.cmd_check does -------------------------------------------------------
    def configure(self, extra_hidden: list | None = None) -> None:
        sandbox.protect_runner()
        sandbox.configure(ROOT, self.build_dir, list(extra_hidden or []))
        self.probe = sandbox.probe(self.build_dir / "bin" / "wb_sandbox_probe")
        print(sandbox.header_line(self.probe))
        print(f"running as uid {os.geteuid()}; working directory {os.getcwd()}")
        self.probe_tells_the_truth()

    def probe_tells_the_truth(self) -> None:
        """The assertions below trust the probe's answer (as the table header does): it must be
        what a judge's sandbox really gets. The solution's judge says it (WB_SANDBOX_REPORT)."""
        judge = self.build_dir / "bin" / "check_01_saxpy_solution"
        if not judge.is_file() or not self.probe:
            print("note  cannot compare the probe with a judge's own report (no solution binary or probe)")
            return
        os.environ["WB_SANDBOX_REPORT"] = "1"
        try:
            out = runner.run_process([str(judge), "--gtest_filter=Correctness.SaxpyZeroSize"], 60)
        finally:
            os.environ.pop("WB_SANDBOX_REPORT", None)
        said = next((line for line in out.stderr.splitlines() if line.startswith("[wb sandbox] ")), "")
        held = said[len("[wb sandbox] "):].split("; not available: ")[0]
        print(f"a judge's own report: {said[len('[wb sandbox] '):] or '(none)'}")
        self.check(held == self.probe.get("held", ""),
                   "the probe's answer is what a judge's sandbox really gets",
                   f"probe: {self.probe.get('held')!r}; judge: {held!r}", about_the_attack=False)

    def held(self, protection: str) -> bool:
        return protection in self.probe.get("held", "")

    # ---- running ----------------------------------------------------------------------------
    def run(self, checks=ALL_CHECKS, timeout_s: float | None = None, env: dict | None = None):
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        start = time.monotonic()
        try:
            results = runner.run_lab_checks(self.lab, self.binary, checks=checks, timeout_s=timeout_s)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        elapsed = time.monotonic() - start
        self.results, self.elapsed = results, elapsed
        self.gradescope = report.gradescope_results(results, BACKEND, "labs", elapsed)
        print(f"\n{len(results)} check(s) in {elapsed:.1f} s; Gradescope score "
              f"{self.gradescope['score']:g} / {self.gradescope['max_score']:g}")
        for r in results:
            first = (r.message.splitlines() or [""])[0]
            print(f"  {r.status.upper():<12} {r.name:<52} {r.duration_s:6.2f} s  {first[:150]}")
        said = []
        for r in results:
            for line in r.stderr_tail.splitlines():
                if line.startswith("ADV: ") and line not in said:
                    said.append(line)
        if said:
            print("what the attack said (its stderr, as the runner kept it):")
            for line in said[:20]:
                print("    " + line[:200])
        print()
        return results

    # ---- assertions -------------------------------------------------------------------------
    def check(self, ok: bool, what: str, detail: str = "", about_the_attack: bool = True) -> bool:
        self.checked += about_the_attack
        print(f"{'ok  ' if ok else 'FAIL'}  {what}" + (f"\n      {detail}" if detail and not ok else ""))
        if not ok:
            self.failures.append(what + (f": {detail}" if detail else ""))
        return ok

    def skip(self, what: str, reason: str) -> None:
        print(f"SKIPPED  {what}: {reason}")
        self.skipped.append(what)

    def needs(self, protection: str, what: str) -> bool:
        if self.held(protection):
            return True
        self.skip(what, f"the sandbox protection '{protection}' is not available here "
                        f"(probe: {self.probe.get('missing') or self.probe or 'not built'})")
        return False

    def all_fail(self, checks: list | None = None) -> None:
        rs = [r for r in self.results if checks is None or r.name in checks]
        self.check(bool(rs) and all(r.status == runner.FAILED for r in rs),
                   f"every check ran fails ({len(rs)})",
                   "; ".join(f"{r.name} is {r.status}" for r in rs if r.status != runner.FAILED))

    def only_do_nothing_passes(self) -> None:
        """For an attack whose lab functions compute nothing and return cudaSuccess: every check
        fails but those that such an implementation rightly passes (saxpy(n=0) and saxpy_host(n<0)
        must do nothing and return cudaSuccess), and the score is no more than theirs."""
        earned = [r for r in self.results if r.name in DO_NOTHING_PASSES]
        print(f"note  {', '.join(DO_NOTHING_PASSES)} rightly pass for lab functions that do nothing and "
              "return cudaSuccess; they are not counted against the containment")
        self.all_fail([r.name for r in self.results if r.name not in DO_NOTHING_PASSES])
        baseline = sum(r.weight for r in earned)
        self.check(self.gradescope["score"] <= baseline,
                   f"the Gradescope score is at most what doing nothing earns ({baseline:g})",
                   f"score {self.gradescope['score']}")

    def score_zero(self) -> None:
        self.check(self.gradescope["score"] == 0, "the Gradescope score is 0", f"score {self.gradescope['score']}")

    def forged_report_would_pass(self) -> None:
        """Control: the report the attack forged passes every check when the runner reads it, so
        its failure here is containment, not a malformed forgery."""
        text = next((line.split("ADV-FORGED-REPORT: ", 1)[1] for r in self.results
                     for line in r.stderr_tail.splitlines() if line.startswith("ADV-FORGED-REPORT: ")), None)
        if text is None:
            print("note  the forged report was not in the kept stderr: control not run")
            return
        with tempfile.TemporaryDirectory(prefix="wb-adv-control-") as tmp:
            path = Path(tmp) / "result.json"
            path.write_text(text)
            outcome = runner.ProcessOutcome(returncode=0, timed_out=False, stdout="", stderr="", duration_s=0.0)
            verdicts = [runner.interpret(self.lab, r.name, outcome, path, 60).status for r in self.results]
        self.check(all(v == runner.PASSED for v in verdicts),
                   "control: the forged report would pass every check, had it reached the runner",
                   f"verdicts {verdicts}")

    def attack_says(self, check: str, pattern: str) -> list:
        """The attack's stderr lines matching @p pattern in one more run of @p check, straight from
        the judge (the runner keeps stderr only for failed checks)."""
        out = runner.run_process([str(self.binary), f"--gtest_filter={check}"], 60)
        return sorted({line for line in out.stderr.splitlines() if line.startswith("ADV: ") and pattern in line})

    def no_process_left(self) -> None:
        left = attack_processes(self.binary.name)
        self.check(not left, f"no process of {self.binary.name} is left", f"still running: {left[:10]}")

    def finish(self) -> int:
        print()
        if self.failures:
            print(f"ADVERSARIAL TEST FAILED ({self.name}): the attack got through or was not contained:")
            for f in self.failures:
                print("  - " + f)
            return 1
        if self.skipped and self.checked == 0:
            print(f"ADVERSARIAL TEST SKIPPED ({self.name}): " + "; ".join(self.skipped))
            return 77
        print(f"ADVERSARIAL TEST PASSED ({self.name}): contained"
              + (f" (skipped: {'; '.join(self.skipped)})" if self.skipped else ""))
        return 0


# ---- machine state ----------------------------------------------------------------------------

def processes() -> dict:
    """pid -> argv of every process this one can see."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                pass
    return out


def attack_processes(name: str) -> list:
    me = os.getpid()
    found = []
    for pid, argv in processes().items():
        argv0 = argv[0].decode(errors="replace") if argv else ""
        if pid != me and name in Path(argv0).name:
            found.append((pid, argv0))
    return found


def processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += 1
        except OSError:
            pass
    return count


def free_bytes(path: str = "/") -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def writable_dirs(top: str = "/", depth: int = 3) -> list:
    """Directories a process of any user could write to (world-writable), as disk_fill.cu looks."""
    found = []

    def walk(d: str, level: int) -> None:
        if level > depth or d in ("/proc", "/sys"):
            return
        try:
            st = os.stat(d)
            if st.st_mode & 0o002:
                found.append(d)
            with os.scandir(d) as it:
                subdirs = [e.path for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for s in subdirs:
            walk(s, level + 1)

    walk(top, 0)
    return found


def fill_files(dirs) -> list:
    out = []
    for d in dirs:
        try:
            out += [Path(d) / n for n in os.listdir(d) if n.startswith(FILL_PREFIX)]
        except OSError:
            pass
    return out


def file_state(path: Path):
    try:
        st = path.stat()
        return (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns)
    except OSError:
        return None


# ---- the tests ---------------------------------------------------------------------------------

def forged_report(t: Test) -> None:
    t.configure()
    t.run()
    t.all_fail()
    t.score_zero()
    t.forged_report_would_pass()
    t.no_process_left()


def exit_mid_check(t: Test) -> None:
    t.configure()
    t.run()
    t.all_fail()
    t.score_zero()
    bad = [r.name for r in t.results
           if not re.search(r"stopped during .*exited with status 0", r.message, re.S)]
    t.check(not bad, "each failure says the lab's process stopped: it exited with status 0",
            "; ".join(f"{n}: {next(r.message for r in t.results if r.name == n)[:200]!r}" for n in bad))
    t.forged_report_would_pass()
    t.no_process_left()


def atexit_rewrites_report(t: Test) -> None:
    t.configure()
    t.run()
    t.only_do_nothing_passes()
    t.forged_report_would_pass()
    t.no_process_left()


def results_dir() -> Path:
    """A folder for --results/--junit that only the hiding of the results' folders protects: not
    under /tmp, /var/tmp, /dev/shm (private in the sandbox) nor the repository (read-only),
    writable by the worker's user."""
    for parent in ("/run/lock", "/var/lock", tempfile.gettempdir()):
        if os.access(parent, os.W_OK | os.X_OK):
            d = Path(tempfile.mkdtemp(prefix="wb-adv-results-", dir=parent))
            d.chmod(0o777)
            return d
    raise RuntimeError("no writable folder for the results")


def writes_results(t: Test) -> None:
    folder = results_dir()
    results, junit = folder / "results.json", folder / "junit.xml"
    default = t.build_dir / "workbook" / "results.json"
    autograder = Path("/autograder/results/results.json")
    default_before, autograder_before = file_state(default), file_state(autograder)
    try:
        t.configure([results, junit])
        print(f"--results {results}, --junit {junit} (folder mode 0777)")
        t.run(env={"WB_ADV_RESULTS": str(results), "WB_ADV_JUNIT": str(junit)})
        t.only_do_nothing_passes()
        t.check(not results.exists() and not junit.exists(),
                "the worker wrote nothing at the --results/--junit paths during the run",
                f"present: {[p.name for p in folder.iterdir()]}")
        t.check(file_state(default) == default_before, f"{default.relative_to(ROOT)} was not touched by the worker")
        t.check(file_state(autograder) == autograder_before, f"{autograder} was not touched by the worker")
        # The runner writes its results, as cmd_check does; whatever the attack left running must not
        # replace them afterwards.
        report.write_json(results, t.gradescope)
        report.write_junit(junit, t.results, BACKEND)
        time.sleep(1.0)
        data = json.loads(results.read_text())
        t.check(data == json.loads(json.dumps(t.gradescope)) and data["score"] < data["max_score"],
                f"results.json holds the runner's results (score {t.gradescope['score']:g}) a second after writing",
                f"score {data.get('score')}, output {data.get('output')!r}")
        root = ET.parse(junit).getroot()
        failed = sum(r.status == runner.FAILED for r in t.results)
        t.check(root.get("failures") == str(failed), f"the JUnit file holds the runner's {failed} failures",
                f"failures={root.get('failures')}")
        t.no_process_left()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reads_solutions(t: Test, cwd: Path, how: str) -> None:
    os.chdir(cwd)
    t.configure()
    print(f"the runner's working directory is {cwd} ({how})")
    t.run(FAST_CORRECTNESS)
    if t.needs(HIDDEN, "the solution is hidden from the worker"):
        t.all_fail()
        leaks = t.attack_says("Correctness.SaxpySmallSizes", "read the solution")
        t.check(not leaks, "the worker could read no copy of the solution", "; ".join(leaks))
    t.no_process_left()


def reads_solutions(t: Test) -> None:
    _reads_solutions(t, ROOT, "`./workbook check` from the repository's root")


def reads_solutions_from_cwd(t: Test) -> None:
    # `cd build/sim && ../../workbook check`, or a grading script whose working directory is a
    # hidden folder: paths relative to the current directory start below the hiding mount.
    _reads_solutions(t, t.build_dir, "the runner started inside the build tree, a hidden folder")


def reads_git_history(t: Test) -> None:
    os.chdir(ROOT)
    has = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", "HEAD:solutions/01-saxpy/saxpy.cu"],
                         capture_output=True).returncode == 0
    t.configure()
    if not has:
        t.skip("the solution is not readable from git history", "this repository's history holds no solution")
        return
    try:
        t.run(FAST_CORRECTNESS)
        if t.needs(HIDDEN, "the solution in the repository's history is hidden from the worker"):
            t.all_fail()
            leaks = t.attack_says("Correctness.SaxpySmallSizes", "read the solution")
            t.check(not leaks, "the worker could not read the solution from the history", "; ".join(leaks))
        t.no_process_left()
    finally:  # the copies of .git the attack made, where /tmp was not private
        for copy in Path(tempfile.gettempdir()).glob("wb-adv-git-*"):
            shutil.rmtree(copy, ignore_errors=True)


def redefines_comparator(t: Test) -> None:
    t.configure()
    t.run()
    t.only_do_nothing_passes()
    t.no_process_left()


def static_ctor_changes_inputs(t: Test) -> None:
    t.configure()
    t.run()
    t.only_do_nothing_passes()
    t.no_process_left()


def fork_bomb(t: Test) -> None:
    t.configure()
    nobody = 65534
    before_all, before_nobody = len(processes()), processes_of(nobody)
    t.run(["Correctness.SaxpySmallSizes", "Correctness.SaxpyZeroSize"], timeout_s=60)
    time.sleep(0.5)
    after_all, after_nobody = len(processes()), processes_of(nobody)
    print(f"processes: {before_all} before, {after_all} after; of uid {nobody}: {before_nobody} before, "
          f"{after_nobody} after")
    if any("not forking" in line for r in t.results for line in r.stderr_tail.splitlines()):
        t.skip("the fork bomb is contained", "no process limit holds for the worker here: the attack refused")
    t.only_do_nothing_passes()
    t.check(t.elapsed < 30, f"the run ended well within its time limits ({t.elapsed:.1f} s < 30 s)")
    t.no_process_left()
    t.check(after_all <= before_all + 20, "the number of processes did not grow (20 tolerated for the machine)",
            f"{before_all} -> {after_all}")
    t.check(after_nobody <= before_nobody, f"no process of uid {nobody} is left", f"{before_nobody} -> {after_nobody}")


def _disk_fill(t: Test, anywhere: bool) -> None:
    os.chdir(ROOT)
    t.configure()
    dirs = {"/tmp", "/var/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~"), str(ROOT)}
    if anywhere:
        dirs |= set(writable_dirs())
        print("world-writable folders of this machine: " + ", ".join(sorted(writable_dirs())))
    free_before = free_bytes("/")
    try:
        t.run(["Correctness.SaxpySmallSizes"], timeout_s=60, env={"WB_ADV_FILL_ANYWHERE": "1" if anywhere else "0"})
        drop = free_before - free_bytes("/")
        # While it wrote (files in a folder removed since, e.g. the runner's temporary one, count too).
        said = [int(m.group(1)) for r in t.results for m in re.finditer(r"the host's / lost (-?\d+) MiB", r.stderr_tail)]
        drop = max([drop] + [mib * 2**20 for mib in said])
        left = fill_files(dirs)
        print(f"free space on /: at most {drop / 2**20:.0f} MiB used during the run; {len(left)} file(s) left: "
              f"{sorted(set(str(p.parent) for p in left))}")
        t.all_fail()
        t.check(t.elapsed < 30, f"the run ended well within its time limit ({t.elapsed:.1f} s)")
        t.check(drop < 300 * 2**20, "the host's free space on / did not drop by more than 300 MiB",
                f"it dropped by {drop / 2**20:.0f} MiB")
        t.check(not left, "the attack left no file on the host", f"{len(left)} files, e.g. {left[:3]}")
        t.no_process_left()
    finally:
        removed = 0
        for p in fill_files(dirs):
            try:
                removed += p.stat().st_size
                p.unlink()
            except OSError:
                pass
        if removed:
            print(f"cleanup: removed {removed / 2**20:.0f} MiB of files the attack left")


def disk_fill(t: Test) -> None:
    _disk_fill(t, anywhere=False)


def disk_fill_anywhere(t: Test) -> None:
    # Any folder the worker's user can write to, e.g. /run/lock (mode 1777 on / in many images).
    _disk_fill(t, anywhere=True)


def endless_print(t: Test) -> None:
    t.configure()
    t.run(["Correctness.SaxpySmallSizes"], timeout_s=30)
    r = t.results[0]
    t.all_fail()
    t.check("printed more than" in r.message, "the check was stopped because it printed too much",
            f"message: {r.message[:200]!r}")
    t.check(r.duration_s < 15, f"it was stopped long before its time limit of {t.lab.timeout_for(r.name):g} s "
                               f"({r.duration_s:.1f} s)")
    t.no_process_left()


def _listener(t: Test, env: dict, server: socket.socket) -> None:
    server.listen(16)
    server.setblocking(False)
    t.run(["Correctness.SaxpySmallSizes", "Correctness.SaxpyZeroSize"], env=env)
    received = []
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            break
        conn.settimeout(1.0)
        try:
            received.append(conn.recv(16))
        except OSError:
            received.append(b"")
        conn.close()
    if t.needs(NETWORK, "the worker cannot reach the listener"):
        t.check(not received, "the listener received no connection", f"received {received}")
        t.all_fail()
    t.no_process_left()


def network_connect(t: Test) -> None:
    t.configure()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        print(f"listening on 127.0.0.1:{port}")
        _listener(t, {"WB_ADV_PORT": str(port)}, server)


def unix_socket_connect(t: Test) -> None:
    # A Unix socket outside every folder the sandbox hides or replaces, like a service's socket
    # under /run (/run/dbus/system_bus_socket, a container runtime's socket, ...).
    t.configure()
    folder = None
    for parent in ("/run", "/run/lock", os.environ.get("XDG_RUNTIME_DIR", "")):
        if parent and os.access(parent, os.W_OK | os.X_OK):
            folder = Path(tempfile.mkdtemp(prefix="wb-adv-socket-", dir=parent))
            break
    if folder is None:
        t.skip("the worker cannot reach a Unix socket outside the sandbox", "no folder for the socket here")
        return
    try:
        folder.chmod(0o755)
        path = folder / "service.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(path))
            path.chmod(0o777)
            print(f"listening on {path}")
            _listener(t, {"WB_ADV_UNIX_SOCKET": str(path)}, server)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def destructor_sleeps(t: Test) -> None:
    t.configure()
    t.run()
    for r in t.results:
        if r.status == runner.NOT_MEASURED and t.allow_not_measured:
            print(f"note  {r.name} is NOT MEASURED here, as for the solution ({r.message})")
            continue
        t.check(r.status == runner.PASSED, f"{r.name} passes as it does for the solution", r.message[:300])
    # A judge that waited for the worker's end would wait until the check's time limit (the
    # worker sleeps 1000 s). It ends a worker within 1.5 s of asking it to stop (judge.cpp), so
    # each check must end well inside its limit; the solution's own time (SaxpyLargeSizes: 9-13 s
    # on a 2-core machine) is no fixed bound.
    slow = [f"{r.name} {r.duration_s:.1f} s of {t.lab.timeout_for(r.name):g} s" for r in t.results
            if r.duration_s >= t.lab.timeout_for(r.name) / 2]
    t.check(not slow, "every check ended well inside its time limit (the worker's end is not waited for)",
            "; ".join(slow))
    t.no_process_left()


def signal_handlers(t: Test) -> None:
    forged_report(t)  # handlers that forge and _exit(0) must fare as the plain forgery does


def writes_source_tree(t: Test) -> None:
    os.chdir(ROOT)  # as `./workbook check` is usually run
    if not os.access(Path(__file__).parent, os.W_OK):
        t.configure()
        t.skip("the repository is read-only for the worker", f"this user cannot create a folder in {Path(__file__).parent}")
        return
    scratch = Path(tempfile.mkdtemp(prefix=".scratch-", dir=Path(__file__).parent))
    try:
        scratch.chmod(0o777)
        t.configure()
        t.run(["Correctness.SaxpySmallSizes"], env={"WB_ADV_SCRATCH": str(scratch)})
        written = sorted(p.name for p in scratch.iterdir())
        print(f"files the worker wrote into {scratch.relative_to(ROOT)}: {written}")
        if t.needs(READ_ONLY, "the repository is read-only for the worker"):
            t.check("written-absolute" not in written, "no write by the absolute path")
            t.check("written-relative" not in written, "no write by a path relative to the current directory",
                    "the worker's working directory is the runner's, opened before the read-only mount: "
                    "paths relative to it do not go through that mount")
        t.all_fail()
        t.no_process_left()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


TESTS = {f.__name__: f for f in (
    forged_report, exit_mid_check, atexit_rewrites_report, writes_results, reads_solutions,
    reads_solutions_from_cwd, reads_git_history, redefines_comparator, static_ctor_changes_inputs, fork_bomb,
    disk_fill, disk_fill_anywhere, endless_print, network_connect, unix_socket_connect, destructor_sleeps,
    signal_handlers, writes_source_tree)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", type=Path)
    ap.add_argument("test", choices=sorted(TESTS))
    ap.add_argument("--allow-not-measured", action="store_true")
    args = ap.parse_args()
    if not args.binary.is_file():
        print(f"no check binary {args.binary}")
        return 1
    os.chdir(ROOT)
    t = Test(args.binary, args.test, args.allow_not_measured)
    print(f"== adversarial test {args.test}: {args.binary.name}")
    TESTS[args.test](t)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
