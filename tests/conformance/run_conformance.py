#!/usr/bin/env python3
"""Runs one conformance program and judges it (ctest calls this).

  run_conformance.py output EXPECTED [--backend cuda] -- COMMAND...
      COMMAND must exit 0 and print exactly EXPECTED's text on stdout (what nvcc's build of the
      program prints on a GPU). With --backend cuda, COMMAND is that nvcc build, run on a GPU.
  run_conformance.py refused HEADER [first] -- COMMAND...
      COMMAND (a build) must fail naming <HEADER> as refused by cusim: exactly one error line
      (with `first`: the first error line, for a header the compiler reaches), and never a line
      from NVIDIA's own headers.
  run_conformance.py refused_by_cusim SOURCE -- COMMAND...
      SOURCE is not CUDA (nvcc refuses it): COMMAND (its cusim build) must fail with exactly one
      error line, containing the text of SOURCE's "// cusim:" line, at SOURCE's file and a line of
      it (or in a cusim header, with the compiler naming SOURCE's line that required it).
  run_conformance.py nvcc_refuses SOURCE STAMP -- NVCC...
      NVCC (a compilation of SOURCE) must fail with an error containing the text of SOURCE's
      "// nvcc:" line; then STAMP is written (the cuda build runs this; it needs no GPU).
"""
import difflib
import os
import re
import subprocess
import sys


def quoted_rule(source, who):
    """The text of SOURCE's "// who: ..." line."""
    with open(source, encoding="utf-8") as f:
        for line in f:
            if line.startswith("// %s: " % who):
                return line[len("// %s: " % who):].strip()
    raise SystemExit("%s has no '// %s:' line" % (source, who))


def verdict(problems, text, errors):
    """A refusal test's exit status: the problems found and the build's output, or its one error line."""
    if problems:
        sys.stdout.write("\n".join(problems) + "\n--- output\n" + text)
        return 1
    sys.stdout.write(errors[0] + "\n")
    return 0


def main(argv):
    sep = argv.index("--")
    mode, args, cmd = argv[1], argv[2:sep], argv[sep + 1:]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=240)
    if mode == "output":
        with open(args[0], encoding="utf-8") as f:
            expected = f.read()
        got = "nvcc build on this GPU" if args[1:] == ["--backend", "cuda"] else "cusim"
        ok = proc.returncode == 0 and proc.stdout == expected
        if not ok:
            sys.stdout.write("exit status %d\n" % proc.returncode)
            sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), proc.stdout.splitlines(True),
                                                       "expected (nvcc on a GPU)", got))
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
        return verdict(problems, text, errors)
    if mode == "refused_by_cusim":
        source = args[0]
        want = quoted_rule(source, "cusim")
        text = proc.stdout + proc.stderr
        # g++ quotes names with typographic quotes; the "// cusim:" line is ASCII.
        text = text.replace("\u2018", "'").replace("\u2019", "'")
        errors = [l for l in text.splitlines() if ": error" in l]
        problems = []
        if proc.returncode == 0:
            problems.append("the build succeeded: cusim accepted a program nvcc refuses")
        if len(errors) != 1:
            problems.append("%d error lines, expected exactly one" % len(errors))
        if not errors or want not in errors[0]:
            problems.append("the first error line does not say: " + want)
        elif not re.search(re.escape(os.path.realpath(source)) + r":\d+(:\d+)?: error", errors[0]) and not (
                "/common/cusim/include/" in errors[0] and
                re.search(re.escape(os.path.realpath(source)) + r":\d+(:\d+)?:\s+required from here", text)):
            # A static_assert of cusim's headers: the compiler names the program's line as the
            # place that required it.
            problems.append("the error line does not name the program's file and line")
        return verdict(problems, text, errors)
    if mode == "nvcc_refuses":
        source, stamp = args[0], args[1]
        want = quoted_rule(source, "nvcc")
        text = proc.stdout + proc.stderr
        if proc.returncode == 0 or want not in text:
            sys.stdout.write("%s: nvcc %s; expected it to refuse the program with: %s\n--- nvcc's output\n%s" % (
                source, "accepted it" if proc.returncode == 0 else "refused it for another reason", want, text))
            return 1
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
