#!/usr/bin/env python3
"""Every check can fail: each check of each lab that runs on the sim backend is named by at
least one known-wrong expectation, or is listed in uncovered_checks.json with its reason.

The expectations are read where they are kept: `wb_known_wrong_test(... --expect-fail CHECK
REGEX ...)` in tests/checker/labNN_wrong/*.cmake (labs 01-08; calls may span lines, and those
inside `if(WB_BACKEND STREQUAL "sim") ... else() ... endif()` count on the side that runs on
sim) and the KNOWN_WRONG and CROSS_CHECKS tables of tests/comm/test_known_wrong.py (labs
09-12; an entry whose status is "passed" names no failure). A check with "backends": ["cuda"]
runs only on a GPU: it is listed, not failed. The exceptions file must not name a check that is
covered or that its lab does not have (a stale entry fails too).

  test_check_coverage.py [--list]    --list: print every lab's uncovered checks and exit 0
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXCEPTIONS = Path(__file__).resolve().parent / "uncovered_checks.json"
BACKEND = "sim"


def cmake_commands(text):
    """(name, [arguments]) of each command of a CMake file: comments dropped, quoted arguments
    unquoted (their escapes kept as written: only check names are compared), calls across lines."""
    tokens = re.finditer(r'#[^\n]*|"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_]*\s*\(|\)|[^\s()"#]+|\(', text)
    commands, current, depth = [], None, 0
    for m in tokens:
        tok = m.group(0)
        if tok.startswith("#"):
            continue
        if current is None:
            if tok.endswith("("):
                current, depth = (tok[:-1].strip().lower(), []), 1
            continue
        if tok == ")" or tok.endswith("("):
            depth += 1 if tok.endswith("(") else -1
            if depth == 0:
                commands.append(current)
                current = None
                continue
        current[1].append(tok[1:-1] if tok.startswith('"') else tok)
    if current is not None:
        raise ValueError(f"unterminated call of {current[0]}()")
    return commands


def condition_on_sim(args):
    """Whether an if() condition holds on the sim backend. Only the backend is known here; any
    other condition (TARGET cusim_gcc_plugin, ...) is taken to hold."""
    negate = bool(args) and args[0] == "NOT"
    args = args[1:] if negate else args
    if len(args) == 3 and args[0] in ("WB_BACKEND", "${WB_BACKEND}") and args[1] == "STREQUAL":
        value = args[2] == BACKEND
    else:
        value = True
    return value != negate


def cmake_expectations(path):
    """{lab: {check: [known-wrong names]}} of the wb_known_wrong_test calls in `path` that
    are reached on sim."""
    found, stack = {}, []  # stack: per open if(), [this branch holds, an earlier branch held]
    for name, args in cmake_commands(path.read_text()):
        if name == "if":
            held = condition_on_sim(args)
            stack.append([held, held])
        elif name == "elseif":
            held = not stack[-1][1] and condition_on_sim(args)
            stack[-1] = [held, stack[-1][1] or held]
        elif name == "else":
            stack[-1] = [not stack[-1][1], True]
        elif name == "endif":
            stack.pop()
        elif name == "wb_known_wrong_test" and all(held for held, _ in stack):
            lab, delta = args[0], args[1]
            # CMake does not split a list inside [ ]: an argument with an unbalanced [ swallows
            # every argument after it, and their expectations would silently not run.
            for a in args[:-1]:
                if a.count("[") != a.count("]"):
                    raise ValueError(f"{path}: {delta}: the argument '{a}' has unbalanced square brackets, "
                                     "so CMake merges the arguments after it into it (write . for a bracket)")
            for i, a in enumerate(args):
                if a == "--expect-fail":
                    if i + 2 >= len(args):
                        raise ValueError(f"{path}: {delta}: --expect-fail needs a check and a regex")
                    found.setdefault(lab, {}).setdefault(args[i + 1], []).append(delta)
    if stack:
        raise ValueError(f"{path}: if() without endif()")
    return found


def comm_expectations(path, labs):
    """{lab: {check: [known-wrong names]}} of tests/comm/test_known_wrong.py. The tables key a
    known-wrong version by its delta's name; a delta belongs to the lab whose solution it names."""
    spec = importlib.util.spec_from_file_location("test_known_wrong", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = []
    for name, entries in mod.KNOWN_WRONG.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            rows.append((name, entry[1], entry[2]))
    rows += [(name, check, status) for name, _, check, status, _ in mod.CROSS_CHECKS]
    found = {}
    for name, check, status in rows:
        if status == "passed":
            continue
        delta = path.parent / "known_wrong" / f"{name}.diff"
        header = re.search(r"^--- (\S+)", delta.read_text(), re.M)
        lab = next((lab for lab in labs if header and f"/{lab}/" in "/" + header.group(1)), None)
        if lab is None:
            raise ValueError(f"{delta}: its '--- ' line names no lab's solution")
        found.setdefault(lab, {}).setdefault(check, []).append(name)
    return found


def main():
    list_only = "--list" in sys.argv[1:]
    # Every lab's checks as their WB_CHECK declarations say (checker/wbcheck/declarations.py).
    sys.path.insert(0, str(ROOT / "checker"))
    from wbcheck import labs as wb_labs  # noqa: E402
    labs = {}
    for p in sorted((ROOT / "checker" / "labs").glob("*/lab.json")):
        lab = wb_labs.load_lab(p.parent)
        labs[lab.id] = [{"name": c.name, "backends": list(c.backends or (BACKEND, "cuda"))} for c in lab.checks]
    named = {}
    sources = sorted((ROOT / "tests" / "checker").glob("lab*_wrong/*.cmake"))
    for found in [cmake_expectations(p) for p in sources] + \
                 [comm_expectations(ROOT / "tests" / "comm" / "test_known_wrong.py", labs)]:
        for lab, checks in found.items():
            for check, deltas in checks.items():
                named.setdefault(lab, {}).setdefault(check, []).extend(deltas)
    exceptions = json.loads(EXCEPTIONS.read_text())

    problems, gpu_only = [], []
    for lab, found in sorted(named.items()):
        if lab not in labs:
            problems.append(f"{lab}: known-wrong expectations for a lab that checker/labs does not have")
            continue
        have = {c["name"] for c in labs[lab]}
        for check, deltas in sorted(found.items()):
            if check not in have:
                problems.append(f"{lab}: {', '.join(deltas)} expect {check} to fail, but the lab declares no such check (WB_CHECK)")
    for lab, checks in labs.items():
        excused = exceptions.get(lab, {})
        covered = uncovered = 0
        listed = []
        for c in checks:
            name, backends = c["name"], c.get("backends", [BACKEND])
            is_named = name in named.get(lab, {})
            if name in excused and (is_named or BACKEND not in backends):
                problems.append(f"{lab}: {name} is listed in {EXCEPTIONS.name} but is "
                                + ("covered by " + ", ".join(named[lab][name]) if is_named
                                   else "not run on sim") + ": remove the entry")
            if BACKEND not in backends:
                if not is_named:
                    gpu_only.append(f"{lab}: {name}")
                continue
            if is_named:
                covered += 1
                continue
            uncovered += 1
            if name not in excused:
                problems.append(f"{lab}: {name} runs on sim but no known-wrong version is expected to fail it "
                                f"(add one, or list it with its reason in {EXCEPTIONS.name})")
            else:
                listed.append(f"  uncovered: {name}: {excused[name]}")
        for name in sorted(set(excused) - {c["name"] for c in checks}):
            problems.append(f"{lab}: {EXCEPTIONS.name} lists {name}, which the lab does not declare (WB_CHECK)")
        print(f"{lab}: {covered} of {covered + uncovered} sim checks fail on a known-wrong version"
              + (f"; {uncovered} uncovered" if uncovered else ""))
        if list_only:
            for line in listed:
                print(line)
    for lab in sorted(set(exceptions) - set(labs)):
        problems.append(f"{EXCEPTIONS.name} names {lab}, which checker/labs does not have")
    for g in gpu_only:
        print(f"runs only on a GPU: not covered in CI: {g}")
    for p in problems:
        print("FAIL " + p)
    print(f"{len(problems)} failure(s)")
    return 0 if list_only or not problems else 1


if __name__ == "__main__":
    sys.exit(main())
