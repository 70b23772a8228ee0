#!/usr/bin/env python3
"""Build a known-wrong implementation from a reference solution and a delta.

A known-wrong implementation is the reference solution with one mistake put in. It is kept
as that mistake: a unified diff (the format of `diff -u` and `git diff`) against the
solution, whose first line before the diff says what the mistake is (a known-right
variant, an implementation the checks must accept, says 'Variant:' instead):

    Mistake: the grid-stride reduction adds each block's sum without an atomic.
    --- solutions/03-reduction/reduction.cu
    +++ missing_atomic.cu
    @@ -120,3 +120,3 @@
       __syncthreads();
    -  if (threadIdx.x == 0) atomicAdd(out, sdata[0]);
    +  if (threadIdx.x == 0) *out += sdata[0];

Each hunk is found by its content (context and removed lines), not its line numbers, so the
delta follows the solution when lines are added above it. A hunk whose lines match nowhere,
or more than one place, stops the build with a message naming the delta and the hunk: the
solution changed under the mistake, and the delta must be updated with it (a mistake that
silently stopped applying would leave a test checking the solution instead).

    apply_delta.py SOLUTION DELTA OUTPUT     write OUTPUT (only when its content changes)
    apply_delta.py --describe DELTA          print the one-line description
"""

import re
import sys
from pathlib import Path

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DeltaError(Exception):
    pass


def parse(text: str, name: str):
    """(description, [(old_line_hint, old_lines, new_lines)]) of a delta."""
    lines = text.splitlines()
    description = ""
    i = 0
    while i < len(lines) and not lines[i].startswith("--- "):
        for tag in ("Mistake:", "Variant:"):
            if lines[i].startswith(tag) and not description:
                description = lines[i][len(tag):].strip()
        i += 1
    if not description:
        raise DeltaError(f"{name}: the first lines must say 'Mistake: <what is wrong>' (or, for a different "
                         f"implementation the checks must accept, 'Variant: <what differs>') before the diff")
    if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
        raise DeltaError(f"{name}: no '--- solution' / '+++ mutant' header: not a unified diff")
    i += 2
    hunks = []
    while i < len(lines):
        m = HUNK.match(lines[i])
        if not m:
            raise DeltaError(f"{name}:{i + 1}: expected a hunk header '@@ -a,b +c,d @@', got {lines[i]!r}")
        old_count = int(m.group(2) or "1")
        new_count = int(m.group(4) or "1")
        i += 1
        old, new = [], []
        while i < len(lines) and (len(old) < old_count or len(new) < new_count):
            line = lines[i]
            tag, body = (line[:1], line[1:]) if line else (" ", "")
            if tag == " ":
                old.append(body)
                new.append(body)
            elif tag == "-":
                old.append(body)
            elif tag == "+":
                new.append(body)
            elif tag == "\\":  # "\ No newline at end of file"
                pass
            else:
                raise DeltaError(f"{name}:{i + 1}: a hunk line must start with ' ', '-' or '+': {line!r}")
            i += 1
        if len(old) != old_count or len(new) != new_count:
            raise DeltaError(f"{name}: hunk {len(hunks) + 1} is shorter than its header says "
                             f"({len(old)}/{old_count} old, {len(new)}/{new_count} new lines)")
        if old == new:
            raise DeltaError(f"{name}: hunk {len(hunks) + 1} changes nothing")
        hunks.append((int(m.group(1)), old, new))
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
    if not hunks:
        raise DeltaError(f"{name}: the delta has no hunks")
    return description, hunks


def apply(solution: list, hunks, name: str, solution_name: str) -> list:
    out = list(solution)
    for n, (hint, old, new) in enumerate(hunks, 1):
        width = len(old)
        places = [k for k in range(len(out) - width + 1) if out[k:k + width] == old]
        if len(places) != 1:
            where = "nowhere" if not places else f"{len(places)} places (lines {', '.join(str(p + 1) for p in places)})"
            first = next((l for l in old if l.strip()), old[0] if old else "")
            raise DeltaError(
                f"{name}: hunk {n} (near line {hint}, starting {first.strip()!r}) matches {where} in "
                f"{solution_name}. The solution changed under this known-wrong version: update the "
                f"delta (edit a copy of the solution and run `diff -u`), keeping its mistake.")
        k = places[0]
        out[k:k + width] = new
    return out


def main(argv) -> int:
    try:
        if len(argv) == 2 and argv[0] == "--describe":
            print(parse(Path(argv[1]).read_text(), argv[1])[0])
            return 0
        if len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        solution, delta, output = (Path(a) for a in argv)
        _, hunks = parse(delta.read_text(), str(delta))
        text = solution.read_text()
        lines = apply(text.split("\n"), hunks, str(delta), str(solution))
        result = "\n".join(lines)
        if not output.exists() or output.read_text() != result:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(result)
        return 0
    except (DeltaError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
