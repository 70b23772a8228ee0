#!/usr/bin/env python3
"""Checks which names a .cu file gets without any #include (implicit_includes.txt) against a compiler.

  implicit_includes.py LIST nvcc STAMP -- NVCC [FLAGS...]
      nvcc must declare and refuse exactly what LIST says (the cuda build runs this; it needs no GPU).
      STAMP is written when it does.
  implicit_includes.py LIST sim -- PYTHON REWRITER CXX [FLAGS...]
      the same for cusim: the source rewriter, then the C++ compiler with cusim's headers.

All statements go into one program, one function per line of LIST, so one compilation answers them
all: a statement is "undeclared" when the compiler reports an error on its line.
"""
import os
import re
import subprocess
import sys
import tempfile


def read_list(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            verdict, stmt = line.split(" ", 1)
            if verdict not in ("declared", "undeclared"):
                raise SystemExit("%s: bad line: %s" % (path, line))
            cases.append((verdict, stmt))
    return cases


def main(argv):
    sep = argv.index("--")
    list_path, mode = argv[1], argv[2]
    stamp = argv[3] if mode == "nvcc" else None
    cmd = argv[sep + 1:]
    cases = read_list(list_path)
    # Line 1 declares a kernel, so the file is CUDA; case k sits on line k + 2.
    text = "__global__ void cusim_probe_kernel(float* p) { p[0] = 1.0f; }\n"
    text += "".join("void probe_%d() { %s }\n" % (k, stmt) for k, (_, stmt) in enumerate(cases))
    text += "int main() { return 0; }\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "implicit.cu")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        if mode == "nvcc":
            proc = subprocess.run(cmd + ["-c", src, "-o", os.path.join(tmp, "implicit.o")],
                                  capture_output=True, text=True, errors="replace")
            pattern = re.compile(r"implicit\.cu\((\d+)\): error")
        else:
            python, rewriter, cxx, flags = cmd[0], cmd[1], cmd[2], cmd[3:]
            out = os.path.join(tmp, "implicit.cpp")
            rw = subprocess.run([python, rewriter, src, out], capture_output=True, text=True)
            if rw.returncode != 0:
                sys.stdout.write("the rewriter failed:\n" + rw.stdout + rw.stderr)
                return 1
            proc = subprocess.run([cxx] + flags + ["-fsyntax-only", "-fmax-errors=0", "-x", "c++", out],
                                  capture_output=True, text=True, errors="replace")
            pattern = re.compile(r"implicit\.cu:(\d+):\d+: error")
        output = proc.stdout + proc.stderr
        error_lines = {int(m.group(1)) for m in pattern.finditer(output)}
    wrong = []
    for k, (verdict, stmt) in enumerate(cases):
        got = "undeclared" if k + 2 in error_lines else "declared"
        if got != verdict:
            wrong.append("%s says %s, %s finds it %s" % (stmt, verdict, mode, got))
    if 1 in error_lines or (proc.returncode != 0 and not error_lines):
        wrong.append("the program did not compile for another reason")
    if wrong:
        sys.stdout.write("\n".join(wrong) + "\n--- compiler output\n" + output)
        return 1
    print("%d statements: %s declares exactly what implicit_includes.txt says" % (len(cases), mode))
    if stamp:
        with open(stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
