"""System dependencies: detection, exact package names, installation with apt-get.

Each dependency knows how to detect itself and which Debian/Ubuntu packages provide it.
When some are missing, `./workbook` says which and, on Debian or Ubuntu as root (or with
sudo), installs them with apt-get after saying so; with --no-install it only reports.
The CUDA Toolkit is never installed automatically: the distribution's package is often
older than the GPU driver needs, and NVIDIA's packages need NVIDIA's repository.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

from . import progress
from .project import ROOT

INCLUDE_DIRS = ("/usr/include", "/usr/local/include", "/opt/homebrew/include")
LIB_DIRS = ("/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu")
MIN_CMAKE = (3, 22)


def _header(*names: str) -> bool:
    return all(any(os.path.isfile(os.path.join(d, n)) for d in INCLUDE_DIRS) for n in names)


def _library(stem: str) -> bool:
    return any(glob.glob(os.path.join(d, f"lib{stem}.*")) for d in LIB_DIRS)


def _cmake_ok() -> bool:
    cmake = shutil.which("cmake")
    if not cmake:
        return False
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    m = re.search(r"version (\d+)\.(\d+)", out)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= MIN_CMAKE


def _gcc_major() -> str | None:
    """The major version of g++ (or, before it is installed, of the distribution's gcc package)."""
    for cmd in (["g++", "-dumpversion"], ["apt-cache", "depends", "gcc"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        m = re.search(r"^(\d+)", out.strip()) if cmd[0] == "g++" else re.search(r"Depends: gcc-(\d+)\b", out)
        if m:
            return m.group(1)
    return None


def _gcc_plugin_headers() -> bool:
    """GCC's plugin headers, for cusim's GCC plugin (analysis of struct copies); true for
    compilers other than g++, which the plugin does not apply to."""
    gxx = shutil.which("g++")
    if not gxx:
        return False
    try:
        out = subprocess.run([gxx, "-print-file-name=plugin"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isfile(os.path.join(out.strip(), "include", "gcc-plugin.h"))


def _matplotlib() -> bool:
    """matplotlib importable by this Python or the system's python3 (the benchmarks try both)."""
    for python in (sys.executable, "/usr/bin/python3"):
        try:
            if python and subprocess.run([python, "-c", "import matplotlib"], capture_output=True,
                                         timeout=60).returncode == 0:
                return True
        except (OSError, subprocess.TimeoutExpired):
            pass
    return False


def nvcc_path() -> str | None:
    """nvcc on PATH, from CUDACXX, or in /usr/local/cuda/bin."""
    for candidate in (os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass(frozen=True)
class Dependency:
    key: str
    what: str                       # shown to the user
    present: Callable[[], bool]
    packages: tuple[str, ...]       # Debian/Ubuntu packages
    auto_install: bool = True
    note: str = ""


DEPENDENCIES = {d.key: d for d in (
    Dependency("compiler", "a C++20 compiler (g++ 10 or newer)",
               lambda: bool(shutil.which("g++") or shutil.which("c++")), ("build-essential",)),
    Dependency("cmake", f"CMake {MIN_CMAKE[0]}.{MIN_CMAKE[1]} or newer", _cmake_ok, ("cmake",)),
    Dependency("ninja", "the Ninja build tool", lambda: bool(shutil.which("ninja")), ("ninja-build",)),
    Dependency("gtest", "GoogleTest and GoogleMock",
               lambda: _header("gtest/gtest.h", "gmock/gmock.h") and _library("gtest"),
               ("libgtest-dev", "libgmock-dev")),
    Dependency("boost_context", "Boost.Context (fibers for the sim backend)",
               lambda: _header("boost/context/fiber.hpp") and _library("boost_context"),
               ("libboost-context-dev",)),
    Dependency("gcc_plugin", "GCC's plugin headers (cusim's analysis of structs passed to and from calls)",
               _gcc_plugin_headers, (f"gcc-{_gcc_major() or '12'}-plugin-dev",)),
    Dependency("openblas", "OpenBLAS (cuBLAS on the sim backend)",
               lambda: _library("openblas"), ("libopenblas-dev",)),
    Dependency("mpi", "Open MPI (mpirun and the MPI C++ compiler wrappers)",
               lambda: bool(shutil.which("mpirun") and (shutil.which("mpicxx") or shutil.which("mpic++"))),
               ("openmpi-bin", "libopenmpi-dev")),
    Dependency("matplotlib", "matplotlib for Python 3 (the benchmarks' plots)", _matplotlib, ("python3-matplotlib",)),
    Dependency("doxygen", "Doxygen (and Graphviz for its diagrams)",
               lambda: bool(shutil.which("doxygen")), ("doxygen", "graphviz")),
    Dependency("nvcc", "the CUDA Toolkit's nvcc (cuda backend)", lambda: nvcc_path() is not None,
               ("nvidia-cuda-toolkit",), auto_install=False,
               note=("Install NVIDIA's CUDA Toolkit (package cuda-toolkit from NVIDIA's repository, "
                     "https://developer.nvidia.com/cuda-downloads), or the distribution's "
                     "nvidia-cuda-toolkit if it is new enough for your driver; or set CUDACXX to nvcc's "
                     "path. Without a GPU, use the sim backend (--backend sim).")),
)}


def required(command: str, backend: str | None, needs_mpi: bool = False, plot: bool = False) -> list[str]:
    """Dependency keys a command needs on a backend (@p plot: `bench --plot`, which draws with
    matplotlib; the benchmarks themselves do not need it)."""
    if command == "docs":
        return ["doxygen"]
    keys = ["compiler", "cmake", "ninja", "gtest"]
    if plot:
        keys.append("matplotlib")
    if backend == "sim":
        keys += ["boost_context", "openblas", "gcc_plugin"]
    if backend == "cuda":
        keys.append("nvcc")
    if needs_mpi or (command == "test" and (ROOT / "common" / "comm" / "CMakeLists.txt").is_file()):
        keys.append("mpi")
    return keys


class DependencyError(Exception):
    """Missing system dependencies that were not (or could not be) installed."""


def _is_debian_like() -> bool:
    try:
        text = open("/etc/os-release").read().lower()
    except OSError:
        return False
    return bool(re.search(r"^(id|id_like)=.*\b(debian|ubuntu)\b", text, re.M)) and bool(shutil.which("apt-get"))


def _apt_prefix() -> list[str] | None:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo"):
        return ["sudo"] if sys.stdin.isatty() else ["sudo", "-n"]
    return None


def _run_quietly(cmd: list[str], env: dict) -> tuple[bool, str]:
    """Runs an apt-get command with its output kept (shown when it fails): on a terminal its
    current step ("Unpacking ...", "Setting up ...") is the status line; elsewhere one line
    with the time it took."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(("Get:", "Unpacking ", "Setting up ", "Reading ", "Fetched ")):
            progress.STATUS.show(f"apt-get {cmd[cmd.index('apt-get') + 1]}: {line.strip()}")
    proc.wait()
    progress.STATUS.clear()
    progress.STATUS.note(f"  {'done' if proc.returncode == 0 else 'failed'} in {time.monotonic() - start:.0f} s")
    return proc.returncode == 0, "".join(lines)


def ensure(keys: list[str], allow_install: bool, log=print) -> None:
    """Returns when every dependency in @p keys is present, installing with apt-get where
    allowed and possible; raises DependencyError with the exact package names otherwise."""
    missing = [DEPENDENCIES[k] for k in keys if not DEPENDENCIES[k].present()]
    if not missing:
        return
    installable = [d for d in missing if d.auto_install]
    manual = [d for d in missing if not d.auto_install]
    packages = sorted({p for d in installable for p in d.packages})
    lines = ["Missing system dependencies:"]
    lines += [f"  - {d.what}: Debian/Ubuntu package(s) {' '.join(d.packages)}" for d in missing]
    prefix = _apt_prefix() if _is_debian_like() else None

    if installable and allow_install and prefix is not None:
        log("\n".join(lines))
        log(f"Installing them with apt-get: {' '.join(packages)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (prefix + ["apt-get", "update"],
                    prefix + ["apt-get", "install", "-y", "--no-install-recommends", *packages]):
            log("+ " + " ".join(cmd))
            ok, output = _run_quietly(cmd, env)
            if not ok:
                tail = "\n".join(output.splitlines()[-20:])
                raise DependencyError(f"'{' '.join(cmd)}' failed:\n{tail}\nInstall these packages yourself: "
                                      f"{' '.join(packages)}")
        still = [d for d in installable if not d.present()]
        if still:
            raise DependencyError("still missing after installation: " + ", ".join(d.what for d in still))
        installable = []
        lines = ["Missing system dependencies:"]
        lines += [f"  - {d.what}: Debian/Ubuntu package(s) {' '.join(d.packages)}" for d in manual]

    if not installable and not manual:
        return
    if installable:
        if not allow_install:
            lines.append("Not installing them (--no-install). To install on Debian or Ubuntu:")
        elif prefix is None and _is_debian_like():
            lines.append("Installing needs root or sudo. As root, run:")
        else:
            lines.append("Install them with your system's package manager; on Debian or Ubuntu:")
        lines.append(f"  apt-get install -y {' '.join(packages)}")
    for d in manual:
        lines.append(d.note)
    raise DependencyError("\n".join(lines))
