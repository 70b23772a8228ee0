#!/usr/bin/env python3
"""Runs one conformance program and judges it (ctest calls this).

  run_conformance.py output EXPECTED -- COMMAND...
      COMMAND must exit 0 and print exactly EXPECTED's text on stdout (what nvcc's build of the
      program prints on a GPU).
  run_conformance.py refused HEADER [first] -- COMMAND...
      COMMAND (a build) must fail naming <HEADER> as refused by cusim: exactly one error line
      (with `first`: the first error line, for a header the compiler reaches), and never a line
      from NVIDIA's own headers.
"""
import difflib
import subprocess
import sys


def main(argv):
    sep = argv.index("--")
    mode, args, cmd = argv[1], argv[2:sep], argv[sep + 1:]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=240)
    if mode == "output":
        with open(args[0], encoding="utf-8") as f:
            expected = f.read()
        ok = proc.returncode == 0 and proc.stdout == expected
        if not ok:
            sys.stdout.write("exit status %d\n" % proc.returncode)
            sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), proc.stdout.splitlines(True),
                                                       "expected (nvcc on a GPU)", "cusim"))
            sys.stdout.write("--- stderr\n" + proc.stderr)
        return 0 if ok else 1
    if mode == "refused":
        header, first_only = args[0], "first" in args[1:]
        text = proc.stdout + proc.stderr
        errors = [l for l in text.splitlines() if "error" in l.lower() and "compilation terminated" not in l]
        want = "cusim: <%s> is not supported on the sim backend (see docs/cusim.md)" % header
        problems = []
        if proc.returncode == 0:
            problems.append("the build succeeded")
        if not errors or want not in errors[0]:
            problems.append("the first error line does not say: " + want)
        if not first_only and len(errors) != 1:
            problems.append("%d error lines, expected exactly one" % len(errors))
        if "/usr/local/cuda" in text or "/usr/local/include" in text:
            problems.append("NVIDIA's own headers were reached")
        if problems:
            sys.stdout.write("\n".join(problems) + "\n--- output\n" + text)
            return 1
        sys.stdout.write(errors[0] + "\n")
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
