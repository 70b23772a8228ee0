#!/usr/bin/env python3
"""An adversarial submission of a collective lab (tests/comm/adversarial/<attack>.cpp) under
checker/mpi_launch.py, as `./workbook check` runs it: every check it attacks must fail, no
result it forged may be read, and no process of it may be left behind.

    python3 test_adversarial_comm.py --launcher checker/mpi_launch.py --binary BIN --attack NAME
"""
import argparse
import os
import subprocess
import sys


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--launcher", required=True)
    p.add_argument("--binary", required=True)
    p.add_argument("--attack", required=True)
    a = p.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.launcher)))
    import mpi_launch as launch  # noqa: E402
    failures = []

    def check(ok: bool, what: str, detail: str = "") -> None:
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else "\n     " + detail.replace("\n", "\n     ")))
        if not ok:
            failures.append(what)

    check(launch.worker_of(a.binary) is not None, "the check binary is split (a judge and its worker)",
          f"{a.binary}_worker is missing: the lab's code would run in the checks' process")
    if a.attack == "forged_results":
        for ranks in (1, 2):
            results = launch.run_mpi_checks(a.binary, ranks, time_limit_s=60)
            passed = [r.label for r in results if r.status == "passed"]
            check(results and not passed, f"n={ranks}: every check fails ({len(results)} checks)",
                  "passed: " + ", ".join(passed))
            first = results[0] if results else None
            check(first is not None and "exited" in first.message and "without returning" in first.message,
                  f"n={ranks}: the first check says the lab's process exited",
                  first.message if first else "no result")
    elif a.attack == "callback_forged_id":
        results = launch.run_mpi_checks(a.binary, 1, time_limit_s=60)
        by_name = {r.name: r for r in results}
        for name in ("Correctness.BackwardReportsEachGradientOnce", "Correctness.GradientsMatchReference"):
            attacked = by_name.get(name)
            check(attacked is not None and attacked.status != "passed" and "malformed reply" in attacked.message,
                  f"{name} (mlp_backward forges a call back) fails as a malformed reply",
                  f"{attacked.status}: {attacked.message}" if attacked else "no result")
        # The checks after the attacked ones still run; a no-op broadcast is right at one rank (the
        # Performance checks need two ranks: lab.json runs them at 2 and 4).
        passed = sorted(r.name for r in results if r.status == "passed" and r.name.startswith("Correctness."))
        listed = len(launch.list_tests(a.binary))
        check(listed > 0 and len(results) == listed and passed == ["Correctness.BroadcastParameters"],
              f"every check has a result ({len(results)} of {listed}), no correctness check but the one-rank "
              "broadcast passes", "passed: " + ", ".join(passed))
    else:
        print(f"unknown attack {a.attack}")
        return 2
    left = subprocess.run(["pgrep", "-f", os.path.basename(a.binary)], capture_output=True, text=True).stdout.split()
    left = [pid for pid in left if int(pid) != os.getpid()]
    check(not left, "no process of the attack is left behind", "pids: " + " ".join(left))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
