#!/usr/bin/env python3
"""Tests of apply_delta.py: a delta applies by content where the solution has moved, and
refuses, naming the delta and hunk, where its lines are gone or ambiguous."""

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPLY = HERE / "apply_delta.py"

SOLUTION = """int f(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += i;
  return s;
}
"""
DELTA = """Mistake: the loop stops one short.
Expected: nothing in particular.
--- solution.cu
+++ short_loop.cu
@@ -2,3 +2,3 @@
   int s = 0;
-  for (int i = 0; i < n; ++i) s += i;
+  for (int i = 0; i < n - 1; ++i) s += i;
   return s;
"""

failures = []


def run(solution_text, delta_text):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "solution.cu").write_text(solution_text)
        (d / "short_loop.diff").write_text(delta_text)
        p = subprocess.run([sys.executable, APPLY, d / "solution.cu", d / "short_loop.diff", d / "out.cu"],
                           capture_output=True, text=True)
        out = (d / "out.cu").read_text() if (d / "out.cu").exists() else None
        return p.returncode, out, p.stderr


def expect(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("     " + detail.replace("\n", "\n     "))


rc, out, err = run(SOLUTION, DELTA)
expect(rc == 0 and out == SOLUTION.replace("i < n;", "i < n - 1;"), "the delta applies to the solution", err)

moved = "// a comment added above\n#include <cstdio>\n\n" + SOLUTION
rc, out, err = run(moved, DELTA)
expect(rc == 0 and out == moved.replace("i < n;", "i < n - 1;"),
       "the delta follows the solution when lines are added above it", err)

gone = SOLUTION.replace("++i", "i++")
rc, out, err = run(gone, DELTA)
expect(rc == 1 and out is None and "short_loop.diff: hunk 1" in err and "matches nowhere" in err
       and "update the delta" in err, "a delta whose lines changed stops with the delta and hunk named", err)

twice = SOLUTION + "\n" + SOLUTION.replace("f(", "g(")
rc, out, err = run(twice, DELTA)
expect(rc == 1 and "matches 2 places (lines 2, 8)" in err, "an ambiguous hunk is refused with its places", err)

rc, out, err = run(SOLUTION, DELTA.replace("Mistake:", "Bug:"))
expect(rc == 1 and "Mistake:" in err, "a delta without its 'Mistake:' line is refused", err)

rc, out, err = run(SOLUTION, DELTA.replace("@@ -2,3 +2,3 @@", "@@ -2,4 +2,4 @@"))
expect(rc == 1 and "shorter than its header says" in err, "a hunk shorter than its header is refused", err)

p = subprocess.run([sys.executable, APPLY, "--describe", "/dev/stdin"], input=DELTA, capture_output=True, text=True)
expect(p.stdout.strip() == "the loop stops one short.", "--describe prints the mistake", p.stdout + p.stderr)

variant = DELTA.replace("Mistake: the loop stops one short.", "Variant: the loop counts down.")
p = subprocess.run([sys.executable, APPLY, "--describe", "/dev/stdin"], input=variant, capture_output=True, text=True)
expect(p.returncode == 0 and p.stdout.strip() == "the loop counts down.",
       "a known-right variant's 'Variant:' line is its description", p.stdout + p.stderr)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
