"""Paths of the source tree and build directories; backend resolution."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("sim", "cuda")


def build_dir(backend: str) -> Path:
    """build/sim or build/cuda: one build directory per backend (CMake presets). WB_BUILD_DIR_SIM
    or WB_BUILD_DIR_CUDA names another, already configured one (the project's own tests run
    `./workbook run` against the build directory they belong to)."""
    override = os.environ.get("WB_BUILD_DIR_" + backend.upper())
    return Path(override).resolve() if override else ROOT / "build" / backend


def bin_dir(backend: str) -> Path:
    """Where every executable of a build lands (CMAKE_RUNTIME_OUTPUT_DIRECTORY)."""
    return build_dir(backend) / "bin"


def state_dir(backend: str) -> Path:
    """Where `./workbook` keeps results of the last check of a backend."""
    return build_dir(backend) / "workbook"


def gpu_visible() -> bool:
    """True when `nvidia-smi -L` lists at least one GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def resolve_backend(requested: str | None) -> str:
    """auto (the default, or WB_BACKEND in the environment) -> cuda with a GPU, else sim."""
    choice = requested or os.environ.get("WB_BACKEND") or "auto"
    if choice == "auto":
        return "cuda" if gpu_visible() else "sim"
    if choice not in BACKENDS:
        raise ValueError(f"unknown backend '{choice}': use auto, sim or cuda")
    return choice


def relative(path: Path) -> str:
    """A path relative to the source tree when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
