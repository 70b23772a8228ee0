"""Where a crashed process of the lab's code was: backtraces turned into file:line.

Two reports are read:
- Open MPI's, printed by a rank that dies of a signal (labs 09-12):
      [host:01364] [ 1] /path/check_09_point_to_point(+0x201f0)[0x55a42ba3f1f0]
- the lab worker's (checker/support/remote/worker.cpp), between two marker lines, in glibc's
  backtrace_symbols_fd() format:
      wb: the lab's process crashed with SIGSEGV; backtrace:
      /path/check_01_saxpy_worker(+0x1be34)[0x5555...]
      wb: end of backtrace

Frames in the executable are resolved with binutils' addr2line (the check binaries are built
with debug information); frames in shared libraries (libc, MPI) are left out. Without
addr2line nothing is resolved and callers keep the raw report. Standard library only.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HARNESS_DIRS = tuple(os.path.join(ROOT, d) + os.sep for d in ("common", "checker", "third_party"))
_CHECKS_DIR = os.path.join(ROOT, "checker", "labs") + os.sep
MAX_FRAMES = 8  # frames of a backtrace shown in a message

# "PATH(+0xOFF)[0xADDR]" or "PATH(symbol+0xOFF) [0xADDR]", after an optional Open MPI prefix.
_FRAME = r"([^\s(\[]+)\(([^)]*)\)\s*\[0x[0-9a-fA-F]+\]\s*$"
_OMPI_FRAME_RE = re.compile(r"^\[[^\]:]+:(\d+)\] \[\s*(\d+)\] " + _FRAME)
_OMPI_REPORT_RE = re.compile(r"^\[[^\]:]+:\d+\] (\*\*\* |\[\s*\d+\] |Signal: |Signal code: |Failing at address: |"
                             r"Associated errno: )")
_PLAIN_FRAME_RE = re.compile(r"^" + _FRAME)
WORKER_BEGIN = "wb: the lab's process crashed with "
WORKER_END = "wb: end of backtrace"


_SIGNAL_MEANINGS = {
    "SIGSEGV": "segmentation fault: an invalid memory access, e.g. a null pointer or an index past the end",
    "SIGBUS": "bus error: an invalid or misaligned memory access",
    "SIGABRT": "aborted: an assert(), abort() or an uncaught C++ exception",
    "SIGFPE": "arithmetic exception, e.g. an integer division by zero",
    "SIGILL": "illegal instruction",
    "SIGKILL": "killed, e.g. out of memory",
}


def signal_meaning(number: int) -> str:
    """What signal `number` usually means for a learner's code; "" for the others."""
    try:
        return _SIGNAL_MEANINGS.get(signal.Signals(number).name, "")
    except ValueError:
        return ""


@dataclasses.dataclass
class Frame:
    function: str
    file: str  # absolute path of the source file
    line: int

    @property
    def where(self) -> str:
        path = os.path.relpath(self.file, ROOT) if self.file.startswith(ROOT + os.sep) else self.file
        return f"{path}:{self.line}"

    @property
    def in_lab_code(self) -> bool:
        """Code under test: a source file outside the harness (labs/, solutions/, a known-wrong
        version's build copy, tests/), not the checks, common/ or the system's headers."""
        return not self.file.startswith(_HARNESS_DIRS) and not self.file.startswith("/usr/")


def addr2line(path: str, offsets: list) -> dict:
    """offset -> [Frame] (innermost first, inlined calls expanded) for the code at `offsets` of
    the ELF file `path`, by binutils' addr2line; {} when it is missing or fails. Frames without
    a line, or with a relative file name (the system libraries' own sources), are left out."""
    exe = shutil.which("addr2line")
    if not exe or not offsets or not os.path.isfile(path):
        return {}
    try:
        out = subprocess.run([exe, "-a", "-C", "-f", "-i", "-e", path] + [hex(o) for o in offsets],
                             capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    frames, current, lines, i = {}, None, out.splitlines(), 0
    while i < len(lines):
        if re.fullmatch(r"0x[0-9a-fA-F]+", lines[i].strip()):
            current = int(lines[i], 16)
            frames[current] = []
            i += 1
            continue
        if current is None or i + 1 >= len(lines):
            break
        function, location = lines[i].strip(), lines[i + 1].strip()
        file, _, line = location.rpartition(":")
        line = line.split()[0] if line else ""
        if os.path.isabs(file) and line.isdigit() and int(line) > 0:
            frames[current].append(Frame(function if function != "??" else "", file, int(line)))
        i += 2
    return frames


def _resolve(raw: list, binary: Optional[str]) -> list:
    """raw: (frame number, path, "(...)" contents) in report order -> Frames, innermost first.
    Frame 1 of a signal report is the faulting instruction (frame 0 the signal trampoline); the
    others are return addresses, so the call is the instruction before."""
    wanted = []
    for number, path, sym in raw:
        if number == 0 or not sym.startswith("+0x"):
            continue  # the trampoline, or "symbol+0x.." frames: shared libraries (libc, MPI)
        if binary and not os.path.isfile(path) and os.path.basename(path) == os.path.basename(binary):
            path = binary  # seen from the sandbox, the path may differ
        off = int(sym[3:], 16)
        wanted.append((path, off if number == 1 else off - 1))
    by_path = {}
    for path, off in wanted:
        by_path.setdefault(path, set()).add(off)
    resolved = {path: addr2line(path, sorted(offs)) for path, offs in by_path.items()}
    frames = []
    for path, off in wanted:
        frames += resolved.get(path, {}).get(off, [])
    return frames


def mpi_rank_backtrace(text: str, pid: int) -> list:
    """The Frames of the backtrace Open MPI printed for the crashed process `pid` in `text`."""
    raw = []
    for line in text.splitlines():
        m = _OMPI_FRAME_RE.match(line.strip())
        if m and int(m.group(1)) == pid:
            raw.append((int(m.group(2)), m.group(3), m.group(4)))
    return _resolve(raw, None)


def worker_backtrace(text: str, binary: Optional[str] = None) -> list:
    """The Frames of the lab worker's crash report in `text` (its stderr); `binary` is the
    worker executable as this process sees it."""
    raw, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(WORKER_BEGIN):
            raw, inside = [], True
            continue
        if line == WORKER_END:
            inside = False
            continue
        m = _PLAIN_FRAME_RE.match(line) if inside else None
        if m:
            raw.append((len(raw) + 1, m.group(1), m.group(2)))  # the first: the faulting instruction
    return _resolve(raw, binary)


def short_name(function: str) -> str:
    """A demangled name without its parameter list: "lab09::naive_allreduce(void const*, ...)"
    -> "lab09::naive_allreduce"; "operator()" stays."""
    name = function.strip()
    if name.endswith(" const"):
        name = name[:-6]
    if not name.endswith(")") or name.endswith("operator()"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i] if i > 0 else name
    return name


def _clipped(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def describe(frames: list) -> str:
    """" at FILE:LINE in FUNCTION" of the innermost frame in the lab's code (else the innermost
    frame), then the backtrace up to the check that called it; "" without frames."""
    if not frames:
        return ""
    shown = []
    for f in frames:
        if f.file.startswith("/usr/"):
            continue  # the standard library's headers (std::function and the like)
        shown.append(f)
        if f.file.startswith(_CHECKS_DIR) or len(shown) == MAX_FRAMES:
            break  # the check that called the lab's code: the rest is the harness
    top = next((f for f in frames if f.in_lab_code), shown[0] if shown else frames[0])
    trace = "".join(f"\n    {f.where}  {_clipped(short_name(f.function))}" for f in shown)
    return f" at {top.where} in {short_name(top.function)}" + (
        f"\n  backtrace (innermost first):{trace}" if len(shown) > 1 else "")


def without_reports(text: str) -> str:
    """`text` without Open MPI's and the worker's raw crash reports (shown resolved instead)."""
    out, inside = [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(WORKER_BEGIN):
            inside = True
        if not inside and not _OMPI_REPORT_RE.match(s):
            out.append(line)
        if s == WORKER_END:
            inside = False
    return "\n".join(out)
