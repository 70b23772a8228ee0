"""CMake configure and incremental builds of one backend's build directory."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .project import ROOT, build_dir


class BuildError(Exception):
    """Configure or build failed; the message holds the tool's output."""


@dataclass
class BuildResult:
    ok: bool
    output: str


def _run(cmd: list[str], verbose: bool) -> BuildResult:
    if verbose:
        print("+ " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL)
        return BuildResult(proc.returncode == 0, "")
    proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    return BuildResult(proc.returncode == 0, proc.stdout)


def configure(backend: str, verbose: bool = False, extra: list[str] | None = None) -> None:
    """Configures build/<backend> from the CMake preset unless it already is configured
    (later CMakeLists changes re-run CMake from the build itself)."""
    directory = build_dir(backend)
    if (directory / "build.ninja").is_file() and (directory / "CMakeCache.txt").is_file() and not extra:
        return
    if not verbose:
        print(f"Configuring the {backend} backend in {directory.relative_to(ROOT)} ...", flush=True)
    result = _run(["cmake", "--preset", backend, *(extra or [])], verbose)
    if not result.ok:
        raise BuildError(f"CMake could not configure the {backend} backend:\n{result.output}".rstrip())


def build(backend: str, targets: list[str] | None = None, jobs: int | None = None,
          verbose: bool = False) -> BuildResult:
    """Builds @p targets (everything if None) in build/<backend>."""
    cmd = ["cmake", "--build", str(build_dir(backend))]
    if targets:
        cmd += ["--target", *targets]
    if jobs:
        cmd += ["-j", str(jobs)]
    return _run(cmd, verbose)


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


_ERROR = re.compile(r"(error|Error|undefined reference|FAILED:|fatal)")


def compiler_errors(output: str, max_lines: int = 25) -> str:
    """The interesting part of a failed build's output: the first error lines and their context."""
    lines = output.splitlines()
    first = next((i for i, l in enumerate(lines) if _ERROR.search(l) and not l.startswith("[")), None)
    if first is None:
        return "\n".join(lines[-max_lines:])
    picked = [l for l in lines[first:] if not l.startswith("FAILED:") and not l.startswith("ninja:")]
    # Skip the compiler command line that follows FAILED: (long, rarely useful to a learner).
    picked = [l for l in picked if not (l.startswith("/") and " -c " in l and " -o " in l)]
    return "\n".join(picked[:max_lines])


def print_failure(result: BuildResult) -> None:
    if result.output:
        sys.stdout.write(result.output if result.output.endswith("\n") else result.output + "\n")
