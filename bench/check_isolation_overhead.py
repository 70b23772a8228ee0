#!/usr/bin/env python3
"""Overhead of the checker's trust boundary (judge/worker split and sandbox) on the sim backend.

Runs every check of the reference solutions of the split labs through the runner, once with the
binaries of a build with the split (the default) and once with those of a build configured with
-DWB_SPLIT_CHECKS=OFF (the checks in the lab's process), interleaved, REPS times, and prints the
median wall time per lab and the ratio.

  cmake -S . -B /tmp/sim-inproc -G Ninja -DWB_BACKEND=sim -DWB_SPLIT_CHECKS=OFF \\
        -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build /tmp/sim-inproc --target check_NN_..._solution   (each lab in LABS below)
  bench/check_isolation_overhead.py build/sim/bin /tmp/sim-inproc/bin [REPS [LAB...]]

LAB: a lab's full name (default: every split lab, i.e. every lab with a
checker/labs/NN-name/interface.cpp); the collective labs run under mpirun at their rank counts,
as `./workbook check` runs them.
"""
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import labs, runner, sandbox  # noqa: E402

# The split labs: those whose interface the checks call as requests to the lab's process.
LABS = sorted(p.parent.name for p in (ROOT / "checker" / "labs").glob("*/interface.cpp"))


def run(lab, binary: Path) -> tuple[float, int, int]:
    start = time.monotonic()
    results = runner.run_lab_checks(lab, binary)
    elapsed = time.monotonic() - start
    for r in results:
        if not r.passed:  # a timing that did not count (the check failed) is named, not hidden
            print(f"  {binary.name}: {r.name} did not pass: {(r.message or '').splitlines()[:1]}", file=sys.stderr)
    return elapsed, sum(r.passed for r in results), len(results)


def main() -> int:
    split_bin, inproc_bin = Path(sys.argv[1]), Path(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    chosen = sys.argv[4:] or LABS
    sandbox.protect_runner()
    sandbox.configure(ROOT, split_bin.parent, [])
    print(sandbox.header_line(sandbox.probe(split_bin / "wb_sandbox_probe")))
    by_id = {lab.id: lab for lab in labs.select_labs(chosen)}
    totals = {"split": [0.0] * reps, "in-process": [0.0] * reps}
    print(f"{'lab':20} {'split s':>9} {'in-process s':>13} {'ratio':>7}   (medians of {reps})")
    for lab_id in chosen:
        lab = by_id[lab_id]
        target = lab.target(True)
        times = {"split": [], "in-process": []}
        for rep in range(reps):
            for kind, bindir in (("split", split_bin), ("in-process", inproc_bin)):
                t, passed, total = run(lab, bindir / target)
                if passed != total:
                    print(f"  {lab_id} {kind}: {passed}/{total} passed", file=sys.stderr)
                times[kind].append(t)
                totals[kind][rep] += t
        a, b = statistics.median(times["split"]), statistics.median(times["in-process"])
        print(f"{lab_id:20} {a:9.2f} {b:13.2f} {a / b:7.3f}")
    a, b = statistics.median(totals["split"]), statistics.median(totals["in-process"])
    print(f"{'all':20} {a:9.2f} {b:13.2f} {a / b:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
