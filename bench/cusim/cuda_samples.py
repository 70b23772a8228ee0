#!/usr/bin/env python3
"""cusim on NVIDIA's cuda-samples: the pass rate of public CUDA code, per folder.

usage: bench/cusim/cuda_samples.py CUDA_SAMPLES_CHECKOUT [--only NAME...] [--jobs N] [--timeout S]
                                   [--markdown FILE]

Every sample of Samples/0_Introduction, 2_Concepts_and_Techniques, 3_CUDA_Features and
6_Performance of a cuda-samples checkout (github.com/NVIDIA/cuda-samples; not part of this
project) is built unmodified through `./workbook run` (cusim's rewriter and g++, with the
checkout's Common/ and the sample's own folder on the include path, every .cu and .cpp of the
sample's folder) and run in its folder with the arguments the checkout's test_args.json gives it.
The sample's own checks decide: it passes when it exits with status 0 within the time limit.

A sample is out of scope, and listed with the reason, when it needs what a CPU cannot provide or
what cusim does not model by design: graphics or display interop (OpenGL, EGL, Vulkan, Direct3D,
X11), runtime compilation or driver-API module loading (NVRTC, cuModuleLoad of PTX or cubins),
inline PTX assembly, several GPUs or peer access, another process (IPC), CUDA libraries other than
the runtime (cuBLAS aside, which cusim models: cuFFT, cuRAND, cuSPARSE, cuSOLVER, NPP, nvJPEG,
Thrust), MPI, or a platform other than Linux (Tegra). Everything else counts, whether it passes or not:
a missing runtime function, a feature cusim refuses (dynamic parallelism), a time-out.

Prints one line per sample (PASS, FAIL with the first line that says why, or OUT OF SCOPE with the
reason) and the pass rate per folder; --markdown writes the same as tables (docs/perf/cusim.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("0_Introduction", "2_Concepts_and_Techniques", "3_CUDA_Features", "6_Performance")

# (pattern over the sample's sources, why it is out of scope); the first that matches is given.
OUT_OF_SCOPE = [
    (r"#\s*include\s*[<\"](GL/|GLES|EGL/|vulkan|cuda_gl_interop|cuda_egl_interop|d3d|dxgi|X11/|helper_gl)",
     "graphics or display interop"),
    (r"#\s*include\s*[<\"]nvrtc", "runtime compilation (NVRTC)"),
    (r"\basm\s*(volatile\s*)?\(\s*\"\s*[a-z]+\.[a-z0-9]+", "inline PTX assembly (cusim compiles C++ for the CPU; PTX is not C++)"),
    (r"\bcuModuleLoad\w*\s*\(|\bcuLibraryLoad\w*\s*\(", "driver-API module loading"),
    (r"\bcudaIpc\w+\s*\(|\bcuMemExportToShareableHandle\b", "another process (IPC)"),
    (r"\bcudaDeviceEnablePeerAccess\b|\bcudaDeviceCanAccessPeer\b|\bcudaMemcpyPeer\w*\b",
     "several GPUs (peer access)"),
    (r"#\s*include\s*[<\"](cufft|curand|cusparse|cusolver|npp|nvjpeg|cudnn|nvgraph|cutensor)",
     "a CUDA library cusim does not model"),
    (r"#\s*include\s*[<\"]thrust/", "Thrust (a library cusim does not model)"),
    (r"#\s*include\s*[<\"]mpi\.h", "MPI"),
    (r"#\s*include\s*[<\"](nvscibuf|nvscisync)", "another platform (Tegra)"),
]


# What cusim says on stderr when it refuses something a GPU would do (a launch from a kernel, an
# unsupported call): a sample that ignores the error it got has not passed. Device faults a sample
# provokes on purpose and handles (simpleAssert) are not such refusals.
CUSIM_ERROR = re.compile(r"not supported by cusim|not supported on the sim backend|cusim does not (support|model)")


def sample_dirs(checkout: Path) -> list[tuple[str, Path]]:
    found = []
    for folder in FOLDERS:
        base = checkout / "Samples" / folder
        if not base.is_dir():
            continue
        for d in sorted(p for p in base.iterdir() if p.is_dir()):
            if any(d.glob("*.cu")) or any(d.glob("*.cpp")):
                found.append((folder, d))
    return found


def scope(d: Path) -> str:
    """"" when the sample is in scope, else why not."""
    text = "\n".join(p.read_text(errors="replace") for p in sorted(d.iterdir())
                     if p.suffix in (".cu", ".cpp", ".cuh", ".h", ".hpp") and p.is_file())
    for pattern, why in OUT_OF_SCOPE:
        if re.search(pattern, text):
            return why
    if not any(re.search(r"\bmain\s*\(", p.read_text(errors="replace"))
               for p in d.iterdir() if p.suffix in (".cu", ".cpp")):
        return "no main()"
    return ""


def run_sample(checkout: Path, d: Path, args_of: dict, timeout_s: float) -> tuple[str, str, float]:
    """(PASS | FAIL, the first line that says why, seconds)."""
    start = time.monotonic()
    sources = sorted(str(p) for p in d.iterdir() if p.suffix in (".cu", ".cpp") and p.is_file())
    spec = args_of.get(d.name, {})
    runs = spec.get("runs") or [{"args": spec.get("args", [])}]
    for r in runs:
        cmd = [str(ROOT / "workbook"), "run", "--no-install", "-I", str(checkout / "Common"), "-I", str(d),
               *sources, "--", *r.get("args", [])]
        # Its own process group: a sample stopped at the time limit takes its children with it.
        proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return "FAIL", f"time limit of {timeout_s:.0f} s exceeded", time.monotonic() - start
        lines = [l for l in (err + "\n" + out).splitlines() if l.strip()]
        if proc.returncode != 0:
            why = next((l for l in lines if re.search(r"error|Error|failed|FAILED|refuse|not supported|waived", l)),
                       lines[-1] if lines else f"exit status {proc.returncode}")
            return "FAIL", f"exit {proc.returncode}: {why.strip()[:300]}", time.monotonic() - start
        # A sample that ignores an error cusim reported (a launch it refused) has not passed.
        refused = next((l for l in lines if CUSIM_ERROR.search(l)), "")
        if refused:
            return "FAIL", f"exit 0, but cusim reported: {refused.strip()[:300]}", time.monotonic() - start
    return "PASS", "", time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="a cuda-samples checkout (Common/, Samples/, test_args.json)")
    ap.add_argument("--only", nargs="*", help="these samples only (folder names)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per sample, build included")
    ap.add_argument("--markdown", type=Path, help="also write the results as markdown tables here")
    a = ap.parse_args()
    checkout = a.checkout.resolve()
    if not (checkout / "Common" / "helper_cuda.h").is_file():
        print(f"{checkout}: not a cuda-samples checkout (no Common/helper_cuda.h)", file=sys.stderr)
        return 2
    args_file = checkout / "test_args.json"
    args_of = json.loads(args_file.read_text()) if args_file.is_file() else {}
    samples = [(f, d) for f, d in sample_dirs(checkout) if not a.only or d.name in a.only]
    rows: dict[str, tuple[str, str, str, float]] = {}
    todo = []
    for folder, d in samples:
        why = scope(d) or ("skipped by the checkout's test_args.json" if args_of.get(d.name, {}).get("skip") else "")
        if why:
            rows[d.name] = (folder, "OUT OF SCOPE", why, 0.0)
        else:
            todo.append((folder, d))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = {pool.submit(run_sample, checkout, d, args_of, a.timeout): (folder, d) for folder, d in todo}
        for fut in concurrent.futures.as_completed(futures):
            folder, d = futures[fut]
            status, why, seconds = fut.result()
            rows[d.name] = (folder, status, why, seconds)
            print(f"{status:<13} {folder}/{d.name} ({seconds:.0f} s){': ' + why if why else ''}", flush=True)
    lines = []
    total_pass = total_in = 0
    for folder in FOLDERS:
        mine = {n: r for n, r in rows.items() if r[0] == folder}
        if not mine:
            continue
        passed = sum(r[1] == "PASS" for r in mine.values())
        in_scope = sum(r[1] != "OUT OF SCOPE" for r in mine.values())
        total_pass += passed
        total_in += in_scope
        lines.append(f"\n### {folder}: {passed} of {in_scope} in scope pass"
                     f"{f' ({100.0 * passed / in_scope:.0f}%)' if in_scope else ''}\n")
        lines.append("| sample | result | why |")
        lines.append("|---|---|---|")
        for name, (_, status, why, _) in sorted(mine.items()):
            lines.append(f"| {name} | {status} | {why.replace('|', '/')} |")
    summary = (f"In all: {total_pass} of {total_in} samples in scope pass"
               f"{f' ({100.0 * total_pass / total_in:.0f}%)' if total_in else ''}.")
    print("\n".join(lines) + "\n\n" + summary)
    if a.markdown:
        a.markdown.write_text("\n".join(lines).lstrip() + "\n\n" + summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
