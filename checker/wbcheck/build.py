"""CMake configure and incremental builds of one backend's build directory."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import progress
from .project import ROOT, build_dir, relative


class BuildError(Exception):
    """Configure or build failed; the message holds the tool's output."""


@dataclass
class BuildResult:
    ok: bool
    output: str


_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\] ")


def _run(cmd: list[str], verbose: bool, label: str | None = None) -> BuildResult:
    """Runs a CMake command; without @p verbose its output is kept (shown on failure) and, with
    a @p label, Ninja's "[x/y]" steps become progress (progress.py)."""
    if verbose:
        print("+ " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL)
        return BuildResult(proc.returncode == 0, "")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    steps = progress.Milestones(label) if label else None
    for line in proc.stdout:
        lines.append(line)
        m = _NINJA_STEP.match(line)
        if steps and m:
            steps.update(int(m.group(1)), int(m.group(2)))
    proc.wait()
    progress.STATUS.clear()
    return BuildResult(proc.returncode == 0, "".join(lines))


def cached(backend: str, name: str) -> str | None:
    """A variable of build/<backend>'s CMake cache, or None where it is not set."""
    try:
        text = (build_dir(backend) / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(name)}:[A-Z]+=(.*)$", text, re.M)
    return m.group(1) if m else None


def configure(backend: str, verbose: bool = False, extra: list[str] | None = None, provided: str = "",
              force: bool = False) -> None:
    """Configures build/<backend> from the CMake preset unless it already is configured
    (later CMakeLists changes re-run CMake from the build itself). @p provided is the
    WB_PROVIDED_DIR the build must have (cmake/WbProvided.cmake): "" links the learner's own
    earlier labs, and a build left with another value is configured again. @p force configures
    again even so (what CMake computed from the tree's files is then current)."""
    directory = build_dir(backend)
    configured = (directory / "build.ninja").is_file() and (directory / "CMakeCache.txt").is_file()
    if configured and not extra and not force and (cached(backend, "WB_PROVIDED_DIR") or "") == provided:
        return
    if configured:  # the build's own directory, which need not be the preset's (WB_BUILD_DIR_<BACKEND>)
        command = ["cmake", "-S", str(ROOT), "-B", str(directory)]
    else:
        command = ["cmake", "--preset", backend]
        if not verbose:
            print(f"Configuring the {backend} backend in {relative(directory)} ...", flush=True)
    command += [*(extra or []), f"-DWB_PROVIDED_DIR={provided}"]
    result = _run(command, verbose)
    if not result.ok:
        raise BuildError(f"CMake could not configure the {backend} backend:\n{result.output}".rstrip())


def build(backend: str, targets: list[str] | None = None, jobs: int | None = None,
          verbose: bool = False, label: str | None = None) -> BuildResult:
    """Builds @p targets (everything if None) in build/<backend>; @p label names the build in
    its progress ("Building (sim)"), none is shown without one."""
    cmd = ["cmake", "--build", str(build_dir(backend))]
    if targets:
        cmd += ["--target", *targets]
    if jobs:
        cmd += ["-j", str(jobs)]
    return _run(cmd, verbose, label)


def targets_matching(backend: str, pattern: str) -> list[str]:
    """Names of the build's targets that match the regular expression @p pattern."""
    ninja = shutil.which("ninja")
    if not ninja:
        return []
    out = subprocess.run([ninja, "-C", str(build_dir(backend)), "-t", "targets", "all"],
                         capture_output=True, text=True, errors="replace")
    names = set()
    for line in out.stdout.splitlines():
        name, _, rule = line.partition(": ")
        if rule.strip() == "phony" and re.fullmatch(pattern, name):
            names.add(name)
    return sorted(names)


# A compiler diagnostic: g++/clang "path:line[:col]: kind: text" or nvcc "path(line): kind: text".
_GCC_DIAG = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s(?P<rest>.*)$")
_NVCC_DIAG = re.compile(r"^(?P<path>[^\s(][^(]*?)\((?P<line>\d+)\):\s(?P<rest>.*)$")
_CONTEXT = re.compile(r"^(?P<path>[^\s:][^:]*?): (In |At )")          # "file.cu: In function 'f':"
_IS_ERROR = re.compile(r"^(fatal error|error|catastrophic error)\b|^error #")
_NOISE = re.compile(r"^(FAILED: |ninja: |\[\d+/\d+\] |\d+ errors? detected in the compilation|"
                    r"compilation terminated\.|make(\[\d+\])?: )")


_NVCC_AT = re.compile(r"at line (?P<line>\d+) of \"?(?P<path>[^\s\"]+)\"?\s*$")


def _excerpt(path: str, line: int) -> list[str]:
    """Line @p line of the repository's file @p path, in gcc's "  12 | text" form ([] if unreadable)."""
    try:
        with open(ROOT / path, errors="replace") as f:
            for number, text in enumerate(f, 1):
                if number == line:
                    return [f" {line:>5} | {text.rstrip()}"] if text.strip() else []
    except OSError:
        pass
    return []


def _diagnostic(line: str):
    m = _GCC_DIAG.match(line) or _NVCC_DIAG.match(line)
    return m if m and not line.startswith((" ", "\t")) else None


def _is_command(line: str) -> bool:
    """A compiler command line that ninja prints after FAILED: (long, rarely useful to a learner)."""
    return line.startswith("/") and " -c " in line and " -o " in line


def compiler_errors(output: str, max_lines: int = 25, learner_dirs: tuple[str, ...] = ("labs/", "solutions/")) -> str:
    """The part of a failed build's output a learner needs, most useful first:

    1. the first diagnostic that names a file of a lab (labs/NN-name/..., or solutions/ when
       those are checked) with its source line: the error itself when it is in the lab's file;
       for an error inside a header (a template instantiated with the wrong type) the place in
       the lab's file that led to it (gcc's "required from here");
    2. the first `error:` line and its source line, when it was not already 1;
    3. the rest of the diagnostics in the compiler's order, up to @p max_lines lines in all,
       with what was left out counted.
    Absolute paths inside the repository are shown relative to it."""
    prefix = str(ROOT) + "/"
    lines = [l.rstrip("\n").replace(prefix, "") for l in output.splitlines()]
    lines = [l for l in lines if not _NOISE.match(l) and not _is_command(l)]
    # Group the output into blocks: a diagnostic (or context) line with the lines that follow
    # it (source excerpt, caret, continuation), so that a block is shown or left out whole.
    blocks: list[list[str]] = []
    for line in lines:
        starts = _diagnostic(line) or _CONTEXT.match(line) or line.startswith("In file included from ")
        if starts or not blocks:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    blocks = [b for b in blocks if any(l.strip() for l in b)]
    for b in blocks:
        while b and not b[-1].strip():
            b.pop()

    def in_lab(block) -> bool:
        m = _diagnostic(block[0])
        return bool(m) and m.group("path").startswith(learner_dirs)

    def is_error(block) -> bool:
        m = _diagnostic(block[0])
        return bool(m) and bool(_IS_ERROR.match(m.group("rest")))

    first_error = next((i for i, b in enumerate(blocks) if is_error(b)), None)
    if first_error is None:
        return "\n".join(lines[-max_lines:])
    lead = []
    here: list[str] = []   # nvcc names the instantiation point only inside the error's block
    if not in_lab(blocks[first_error]):
        # The instantiation point: the last place in the lab's files before the error (gcc's
        # "required from here"), else the first after; for nvcc, "at line N of <lab file>".
        before = [i for i in range(first_error) if in_lab(blocks[i])]
        after = [i for i in range(first_error + 1, len(blocks)) if in_lab(blocks[i])]
        if before or after:
            lead.append(before[-1] if before else after[0])
        else:
            following = [first_error] + [j for j in range(first_error + 1, len(blocks))
                                         if not is_error(blocks[j])][:3]  # its notes ("detected during")
            for line in (l for j in following for l in blocks[j]):
                m = _NVCC_AT.search(line)
                if m and m.group("path").startswith(learner_dirs):
                    here = [f"{m.group('path')}({m.group('line')}): the error below is in a template "
                            "instantiated from here"]
                    here += _excerpt(m.group("path"), int(m.group("line")))
                    break
    lead.append(first_error)
    order = lead + [i for i in range(len(blocks)) if i not in lead]
    shown: list[str] = list(here)
    for i in order:
        block = blocks[i]
        shown.extend(block)
        m = _diagnostic(block[0])
        if i == lead[0] and m and len(block) == 1 and m.group("path").startswith(learner_dirs):
            shown.extend(_excerpt(m.group("path"), int(m.group("line"))))  # gcc prints none for notes
    if len(shown) > max_lines:
        left = len(shown) - max_lines
        shown = shown[:max_lines] + [f"... ({left} more line{'s' if left != 1 else ''} of compiler output: "
                                     "run with --verbose)"]
    return "\n".join(shown)


def print_failure(result: BuildResult) -> None:
    if result.output:
        sys.stdout.write(result.output if result.output.endswith("\n") else result.output + "\n")
