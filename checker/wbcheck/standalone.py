"""`./workbook run|sanitize|profile FILE.cu`: any standalone CUDA program (a .cu with its own main)
built through cusim and run on the CPU, like nvcc + compute-sanitizer + Nsight Compute on a GPU."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from . import build
from .project import build_dir, relative

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


class StandaloneError(Exception):
    """The program could not be built; the message says why and where."""


def _config() -> dict:
    path = build_dir("sim") / "cusim_standalone.json"
    if not path.is_file():
        raise StandaloneError(f"{relative(path)} is missing: the sim build did not configure cusim")
    return json.loads(path.read_text())


def compile_program(sources: list[Path], analysis: bool, verbose: bool = False,
                    include_dirs: list[Path] | None = None) -> Path:
    """Rewrites and compiles @p sources (.cu through cusim's rewriter, .cpp as they are) and links
    them with cusim, with @p include_dirs searched as nvcc's -I. Returns the executable. Compiler
    errors name the original .cu lines."""
    cfg = _config()
    includes = [str(Path(d).resolve()) for d in include_dirs or []]
    # A program that includes <omp.h> is built with OpenMP, as its own build would (nvcc -Xcompiler
    # -fopenmp): without it, it could not link.
    openmp = ["-fopenmp"] if any(re.search(r"#\s*include\s*<omp\.h>", s.read_text(errors="replace"))
                                 for s in sources if s.is_file()) else []
    key = hashlib.sha1(("|".join(str(s) for s in sources) + str(analysis) + "|".join(includes)).encode()).hexdigest()[:10]
    out = build_dir("sim") / "standalone" / f"{sources[0].stem}-{key}"
    out.mkdir(parents=True, exist_ok=True)
    objects = []
    for src in sources:
        if not src.is_file():
            raise StandaloneError(f"{src}: no such file")
        compiled = src
        if src.suffix == ".cu":
            compiled = out / (src.name + ".cpp")
            proc = subprocess.run([cfg["python"], cfg["rewriter"], str(src), str(compiled)],
                                  capture_output=True, text=True, errors="replace")
            if proc.returncode != 0:
                raise StandaloneError(proc.stderr.strip() or f"the cusim rewriter failed on {src}")
        obj = out / (src.name + ".o")
        cmd = [cfg["cxx"], *cfg["compile_flags"], *(cfg["analysis_flags"] if analysis else []),
               "-I", cfg["include"], *(["-I", cfg["refused_include"]] if cfg.get("refused_include") else []),
               "-I", str(src.parent), *[f for d in includes for f in ("-I", d)], *openmp, "-c", str(compiled),
               "-o", str(obj)]
        if verbose:
            print("+ " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            raise StandaloneError(f"{src} does not compile:\n{proc.stderr.rstrip()}")
        objects.append(str(obj))
    exe = out / sources[0].stem
    # cuBLAS on the CPU (cusim_cublas and OpenBLAS), linked only when the program calls it.
    cublas = ["-Wl,--as-needed", *cfg["cublas_libraries"], "-Wl,--no-as-needed"] if cfg.get("cublas_libraries") else []
    cmd = [cfg["cxx"], *objects, *cublas, *cfg["libraries"], *openmp, "-o", str(exe)]
    if verbose:
        print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise StandaloneError(f"linking {exe.name} failed:\n{proc.stderr.rstrip()}")
    return exe


def _split(files_and_args: list[str]) -> tuple[list[Path], list[str]]:
    if "--" in files_and_args:
        i = files_and_args.index("--")
        files, args = files_and_args[:i], files_and_args[i + 1:]
    else:
        files, args = files_and_args, []
    if not files:
        raise StandaloneError("name a .cu file (with its own main), e.g. ./workbook run my_kernel.cu -- 1024")
    for f in files:
        if not f.endswith((".cu", ".cpp", ".cc", ".cxx")):
            raise StandaloneError(f"{f}: expected a .cu (or .cpp) source file; program arguments go after --")
    return [Path(f).resolve() for f in files], args


def run(mode: str, files_and_args: list[str], tool: str | None, jobs: int | None, verbose: bool,
        include_dirs: list[str] | None = None) -> int:
    """mode: run (plain), sanitize (analysis tools, exit 1 on errors) or profile (metrics).
    @p include_dirs: directories searched for #include, as nvcc's -I (a sample's Common/)."""
    sources, args = _split(files_and_args)
    for d in include_dirs or []:
        if not Path(d).is_dir():
            raise StandaloneError(f"-I {d}: no such directory")
    build.configure("sim", verbose=verbose)
    result = build.build("sim", ["cusim", *(["cusim_cublas"] if _config().get("cublas_libraries") else [])],
                         jobs, verbose)
    if not result.ok:
        build.print_failure(result)
        return 2
    exe = compile_program(sources, analysis=(mode != "run"), verbose=verbose,
                          include_dirs=[Path(d) for d in include_dirs or []])
    env = dict(os.environ)
    if mode == "sanitize":
        env.update(CUSIM_SANITIZE="1", CUSIM_TOOL=tool or "memcheck", CUSIM_ERROR_EXITCODE="1")
        print(f"========= CUSIM-SANITIZER ({env['CUSIM_TOOL']}) {relative(sources[0])}", file=sys.stderr, flush=True)
    elif mode == "profile":
        env.update(CUSIM_PROFILE="1", CUSIM_TOOL="none")
    proc = subprocess.run([str(exe), *args], env=env)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
