#!/usr/bin/env python3
"""comm.nccl_several_gpus: the collective labs' reference solutions over NCCL at several ranks,
one GPU per rank (rank r uses GPU r mod the visible GPUs).

Every check of each binary given runs with WB_COMM_BACKEND=nccl (the communicator's NCCL backend:
the labs' point-to-point messages as ncclSend/ncclRecv, the library collectives as NCCL's) at every
rank count from 2 to the number of visible GPUs (at most 8), through checker/mpi_launch.py as
`./workbook check` runs them. Skipped (exit status 77, with the reason) where fewer than two GPUs
are visible: NCCL refuses two ranks on one GPU, and the machines the project has run on so far
have one (docs/collectives.md, "NCCL").

    test_nccl_gpus.py --launcher checker/mpi_launch.py BINARY...
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77


def visible_gpus() -> tuple[int, str]:
    """The GPUs this process may use, and how that was found out."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0, "nvidia-smi was not found"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return 0, f"nvidia-smi -L failed ({e})"
    count = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    how = f"nvidia-smi -L lists {count}"
    restricted = os.environ.get("CUDA_VISIBLE_DEVICES")
    if restricted is not None:
        ids = [d for d in restricted.split(",") if d.strip()]
        if "-1" in [d.strip() for d in ids]:
            ids = ids[:[d.strip() for d in ids].index("-1")]
        count = min(count, len(ids))
        how += f", CUDA_VISIBLE_DEVICES={restricted!r} leaves {count}"
    return count, how


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launcher", required=True, help="checker/mpi_launch.py")
    parser.add_argument("binaries", nargs="+", help="check binaries of collective labs (their solutions)")
    args = parser.parse_args()
    gpus, how = visible_gpus()
    if gpus < 2:
        print(f"SKIPPED: NCCL at several ranks needs two or more GPUs, one per rank; {how}.")
        return SKIP
    ranks = ",".join(str(n) for n in range(2, min(gpus, 8) + 1))
    env = dict(os.environ, WB_COMM_BACKEND="nccl")
    failed = []
    for binary in args.binaries:
        print(f"== {os.path.basename(binary)} over NCCL, ranks {ranks} ({how})", flush=True)
        rc = subprocess.run([sys.executable, args.launcher, binary, "--ranks", ranks, "--exclude", "*64MiB*",
                             "--time-limit", "300"], env=env).returncode
        if rc != 0:
            failed.append(os.path.basename(binary))
    if failed:
        print(f"FAILED over NCCL: {', '.join(failed)}")
        return 1
    print("every check passed over NCCL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
