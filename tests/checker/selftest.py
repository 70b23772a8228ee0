#!/usr/bin/env python3
"""Checker self-test: runs a check binary through the workbook's runner and asserts the
outcome. Used by ctest (tests/checker/CMakeLists.txt).

  selftest.py --lab 01-saxpy --binary BIN --expect-pass [--allow-not-measured]
              [--backend sim] [--results FILE] [--junit FILE]
      every check passes (NOT MEASURED tolerated only with --allow-not-measured); the
      binary's checks are exactly the declared checks (WB_CHECK) for the backend; results.json and
      JUnit written from the results have the required fields.
      --checks performance|untimed: only the Performance checks, or all the others (the cuda
      backend runs the timed ones alone on the GPU: tests/CMakeLists.txt, wb_gpu_timed_test).
  selftest.py --lab 01-saxpy --binary BIN --expect-all-fail REGEX
      every check fails, and each failure message matches REGEX.
  selftest.py --lab 01-saxpy --binary BIN --expect-fail CHECK REGEX [--expect-fail ...]
      each named check fails with a message (or stderr) matching REGEX.
      With --source FILE, {{line:TEXT}} in a REGEX stands for the numbers of the lines of
      FILE that contain TEXT (a known-wrong version built from a delta: its reports name
      lines that move when the solution changes).
      --expect-no-hint CHECK: that failing check shows no hint (one that would point at a
      cause the failure does not have).
  selftest.py --lab 01-saxpy --binary BIN --expect-pass-check CHECK [--expect-pass-check ...]
      each named check passes (a known-right variant of the solution: the checks accept it).
Exit status 0 when the expectation holds.
"""

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import labs, report, runner  # noqa: E402


def fail(msg: str) -> None:
    print(f"SELFTEST FAILED: {msg}")
    sys.exit(1)


def validate_gradescope(data: dict) -> None:
    for key, kind in (("score", (int, float)), ("max_score", (int, float)), ("tests", list)):
        if not isinstance(data.get(key), kind):
            fail(f"results.json: '{key}' missing or of the wrong type: {data.get(key)!r}")
    if not data["tests"]:
        fail("results.json has no tests")
    total = 0.0
    for t in data["tests"]:
        for key, kind in (("name", str), ("score", (int, float)), ("max_score", (int, float)),
                          ("status", str), ("output", str), ("visibility", str)):
            if not isinstance(t.get(key), kind):
                fail(f"results.json test {t.get('name')!r}: '{key}' missing or of the wrong type")
        if t["status"] not in ("passed", "failed"):
            fail(f"results.json test {t['name']}: status {t['status']!r} is not passed/failed")
        if t["status"] == "failed" and t["score"] != 0:
            fail(f"results.json test {t['name']}: a failed test scores {t['score']}")
        total += t["score"]
    if abs(total - data["score"]) > 1e-9:
        fail(f"results.json: score {data['score']} is not the sum of the tests' scores {total}")


def expand_lines(regex: str, source) -> str:
    """Replaces each {{line:TEXT}} in regex by the line numbers of source containing TEXT."""
    def numbers(m):
        if source is None:
            fail(f"{m.group(0)} in a regex needs --source")
        text = m.group(1)
        found = [str(k) for k, line in enumerate(source.read_text().splitlines(), 1) if text in line]
        if not found:
            fail(f"no line of {source} contains {text!r} (named by {m.group(0)} in a regex)")
        return "(?:" + "|".join(found) + ")"
    return re.sub(r"\{\{line:(.*?)\}\}", numbers, regex)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", required=True)
    ap.add_argument("--binary", required=True, type=Path)
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--expect-pass", action="store_true")
    ap.add_argument("--allow-not-measured", action="store_true")
    ap.add_argument("--expect-all-fail", metavar="REGEX")
    ap.add_argument("--expect-fail", nargs=2, action="append", metavar=("CHECK", "REGEX"), default=[])
    ap.add_argument("--expect-pass-check", action="append", metavar="CHECK", default=[])
    ap.add_argument("--expect-no-hint", action="append", metavar="CHECK", default=[])
    ap.add_argument("--source", type=Path, help="the lab source the {{line:TEXT}} of a REGEX refer to")
    ap.add_argument("--checks", choices=("all", "performance", "untimed"), default="all")
    ap.add_argument("--results", type=Path)
    ap.add_argument("--junit", type=Path)
    args = ap.parse_args()

    lab = labs.select_labs([args.lab])[0]
    only = [c for c, _ in args.expect_fail] + args.expect_pass_check or None
    if args.checks != "all":
        timed = args.checks == "performance"
        only = [c.name for c in lab.checks_for(args.backend) if c.name.startswith("Performance.") == timed]
        if not only:
            fail(f"lab {args.lab} has no {args.checks} checks for {args.backend}")
    table = report.Table(verbose=True)
    results = runner.run_lab_checks(lab, args.binary, checks=only, timeout_s=args.timeout, on_result=table.add)
    print(report.summary_line(results))
    by_name = {r.name: r for r in results}

    if args.expect_pass:
        listed = sorted(c.name for c in lab.checks_for(args.backend) if only is None or c.name in only)
        present = sorted(by_name)
        if listed != present:
            fail(f"the binary's checks {present} differ from the checks declared (WB_CHECK) for {args.backend}: {listed}")
        for r in results:
            if r.status == runner.NOT_MEASURED and args.allow_not_measured:
                print(f"note: {r.name} is NOT MEASURED here ({r.message})")
                continue
            if r.status != runner.PASSED:
                fail(f"{r.name} did not pass: {r.status}: {r.message}")
        data = report.gradescope_results(results, args.backend, "solutions", 1.0)
        validate_gradescope(data)
        if args.results:
            report.write_json(args.results, data)
            validate_gradescope(json.loads(args.results.read_text()))
        if args.junit:
            report.write_junit(args.junit, results, args.backend)
            root = ET.parse(args.junit).getroot()
            cases = root.findall("./testsuite/testcase")
            if len(cases) != len(results) or root.get("failures") != "0":
                fail(f"JUnit XML: {len(cases)} testcases, failures={root.get('failures')}")

    if args.expect_all_fail:
        pattern = re.compile(args.expect_all_fail)
        if not results:
            fail("no checks ran")
        for r in results:
            if r.status != runner.FAILED:
                fail(f"{r.name} should fail but is {r.status}")
            if not pattern.search(r.message):
                fail(f"{r.name} failed, but its message does not match /{args.expect_all_fail}/:\n{r.message}")

    for check in args.expect_pass_check:
        r = by_name.get(check)
        if r is None:
            fail(f"check {check} did not run (present: {sorted(by_name)})")
        if r.status != runner.PASSED:
            fail(f"{check} should accept this variant but is {r.status}: {r.message}")

    for check, regex in args.expect_fail:
        regex = expand_lines(regex, args.source)
        r = by_name.get(check)
        if r is None:
            fail(f"check {check} did not run (present: {sorted(by_name)})")
        if r.status != runner.FAILED:
            fail(f"{check} should fail but is {r.status}")
        if not re.search(regex, r.message + "\n" + r.stderr_tail, re.S):
            fail(f"{check} failed, but its message does not match /{regex}/:\n{r.message}")
    for check in args.expect_no_hint:
        r = by_name.get(check)
        if r is None:
            fail(f"check {check} did not run (present: {sorted(by_name)})")
        if r.hint:
            fail(f"{check} shows a hint, and should not: {r.hint}")
    print("SELFTEST PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
