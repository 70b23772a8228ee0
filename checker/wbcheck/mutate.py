"""`./workbook mutate LAB`: how many small mistakes in a reference solution the lab's checks catch.

Mutants come from universalmutator (PyPI; rules for C, C++ and CUDA by regular expressions:
operators swapped, constants changed, statements deleted, conditions negated, ...). Each
sampled mutant of the solution replaces it in the sim build's check_<lab>_mutant target
(declared by wb_add_lab, built only here); the lab's checks then run on it as they run on a
learner's submission. A mutant is

  killed        some check fails, crashes or times out on it;
  survived      every check passes: either the checks miss a mistake (strengthen them) or
                the mutant computes the same thing (record it as equivalent, with why, in
                checker/labs/<lab>/equivalent_mutants.json);
  equivalent    it survived and matches a recorded equivalent mutant;
  not compiled  the build rejects it (no verdict needed: the compiler caught it).

Each check runs with at most --timeout seconds (default 30; a mutant that loops forever is
killed by the time limit). The checks run one at a time and stop at the first that fails, so a
mutant is killed once and one that hangs costs one time limit.

The collective labs (09-12, "kind": "mpi" in lab.json) run their checks under mpirun at each
rank count of lab.json (checker/wbcheck/collectives.py), through the split build's judges and
workers as `./workbook check` does: one job per rank count in increasing order, then the job
over TCP, each stopped at its first failed check (mpi_launch's stop_at_failure) with no process
left behind, and no further job once a check has failed. A deadlock ends after the lab's stall
window (5 s), a hang at the check's time limit. Before the mutants, the unmutated solution must
pass every check (under the checks' own limits); its time per check and rank count sets that
check's limit on the mutants: SLOWDOWN (3) times as long, at least --timeout, at most the
check's own (a flat 30 s timed out 8-rank 64 MiB all-reduces of mutants that were equivalent
but met a busier machine).

The score is killed / (killed + survived). Reports go to build/mutate/<lab>/: report.json and
one .diff per survivor.
"""

from __future__ import annotations

import difflib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import build, labs, runner
from .project import ROOT, bin_dir, build_dir, relative

BACKEND = "sim"


class MutateError(Exception):
    """A problem that stops the run, said without a traceback."""


_RUN = "import sys; from universalmutator.genmutants import main; sys.argv[0] = 'mutate'; main()"


def _mutator() -> list[str]:
    """The command that runs universalmutator's `mutate`, installing it into build/mutate/venv
    when this Python does not have it."""
    probe = subprocess.run([sys.executable, "-c", "import universalmutator"], capture_output=True)
    if probe.returncode == 0:
        return [sys.executable, "-c", _RUN]
    venv = ROOT / "build" / "mutate" / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        print("Installing universalmutator (PyPI) into build/mutate/venv ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run([str(py), "-c", "import universalmutator"], capture_output=True)
    if probe.returncode != 0:
        pip = subprocess.run([str(py), "-m", "pip", "install", "-q", "universalmutator"], capture_output=True,
                             text=True)
        if pip.returncode != 0:
            raise MutateError("could not install universalmutator from PyPI into build/mutate/venv:\n"
                              f"{pip.stdout}{pip.stderr}\nInstall it yourself (pip install universalmutator) "
                              "and run again.")
    return [str(py), "-c", _RUN]


def generate(source: Path, out_dir: Path) -> list[Path]:
    """All mutants universalmutator makes of @p source, as files in @p out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.mutant.*"):
        old.unlink()
    text = source.read_text()
    # universalmutator takes "{-" for the start of a Haskell block comment and skips every line
    # after it up to a "-}": C++'s `int children[2] = {-1, -1};` would end the mutants there. It
    # reads "{ -" instead, and each mutant gets "{-" back.
    spaced = "{-" in text and "{ -" not in text
    with tempfile.TemporaryDirectory(prefix="wb-mutate-") as tmp:
        work = Path(tmp) / source.name
        work.write_text(text.replace("{-", "{ -") if spaced else text)
        cmd = [*_mutator(), work.name, "cpp", "--noCheck", "--mutantDir", str(out_dir)]
        res = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if res.returncode != 0:
            raise MutateError(f"universalmutator failed on {relative(source)}:\n{res.stdout}{res.stderr}")
    mutants = sorted(out_dir.glob(f"{source.stem}.mutant.*{source.suffix}"),
                     key=lambda p: int(p.name.split(".mutant.")[1].split(".")[0]))
    if spaced:
        for m in mutants:
            m.write_text(m.read_text().replace("{ -", "{-"))
    return mutants


def changed_lines(original: str, mutant: str) -> tuple[str, str, int]:
    """(original line, mutated line, 1-based line number) of a one-line mutant."""
    a, b = original.splitlines(), mutant.splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return x.strip(), y.strip(), i + 1
    n = min(len(a), len(b))
    return (a[n].strip() if n < len(a) else ""), (b[n].strip() if n < len(b) else ""), n + 1


def load_equivalents(lab: labs.Lab) -> list[dict]:
    path = lab.directory / "equivalent_mutants.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    for e in data:
        if not {"original", "mutant", "why"} <= set(e):
            raise MutateError(f"{relative(path)}: every entry needs 'original', 'mutant' and 'why': {e}")
    return data


def _first_failure_direct(lab: labs.Lab, binary: Path, timeout_s: float) -> tuple[str, str] | None:
    """(check, message) of the first check of a single-process lab that fails on @p binary, or
    None when every check passes. One check at a time, stopping at the first that fails: a mutant
    is killed once, and one that loops forever costs one time limit, not one per check."""
    for check in runner.list_checks(binary):
        limit = min(lab.timeout_for(check), timeout_s)
        result = runner.run_lab_checks(lab, binary, checks=[check], timeout_s=limit)[0]
        if result.status not in (runner.PASSED, runner.NOT_MEASURED):
            return result.name, result.message
    return None


# A check of a collective lab may take this many times as long on a mutant as it took on the
# solution (measured at the start of the run, at the same rank count) before it is timed out,
# and at least --timeout seconds; never more than the check's own limit. 8 ranks of a 64 MiB
# all-reduce on 2 shared cores take 20 s or more, so a flat 30 s would time out mutants that
# only met a busier machine.
SLOWDOWN = 3.0


def _first_failure_mpi(lab: labs.Lab, binary: Path, timeout_s: float,
                       solution_s: dict | None = None) -> tuple[str, str] | None:
    """(check [n=ranks], message) of the first check of a collective lab that fails on @p binary
    at any of its rank counts, or None when every check passes at every one. The checks of a rank
    count run in one mpirun job, stopped at the first that fails; the rank counts follow one
    another as in `./workbook check` (increasing, then over TCP), stopping at the first failure.
    @p solution_s: {(ranks, tcp, check): seconds} of the solution, which raise a check's time
    limit to SLOWDOWN times its time there; filled in when it is an empty dict."""
    from . import collectives  # imports checker/mpi_launch.py
    mpi_launch = collectives.mpi_launch
    try:
        checks = mpi_launch.list_tests(str(binary))
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return "(listing the checks)", str(e)
    plan: dict[tuple[int, bool], list[str]] = {}
    for check in checks:
        for config in collectives._configs(lab, check):
            plan.setdefault(config, []).append(check)
    stall = lab.launch.get("stall_s", mpi_launch.DEFAULT_STALL_S)

    measuring = solution_s is not None and not solution_s

    def limits(n: int, tcp: bool):
        def limit(check: str) -> float:
            if measuring:  # the solution, under the checks' own limits
                return lab.timeout_for(check)
            base = timeout_s
            if solution_s and (n, tcp, check) in solution_s:
                base = max(base, SLOWDOWN * solution_s[(n, tcp, check)])
            return min(lab.timeout_for(check), base)
        return limit

    for n, tcp in sorted(plan, key=lambda c: (c[1], c[0])):
        try:
            results = mpi_launch.run_mpi_checks(str(binary), n, plan[(n, tcp)], time_limit_s=limits(n, tcp),
                                                tcp=tcp, stall_s=stall, stop_at_failure=True)
        except RuntimeError as e:  # a process survived SIGKILL: stop rather than pile them up
            raise MutateError(str(e)) from None
        for r in results:
            if measuring:
                solution_s[(n, tcp, r.name)] = r.time_s
            if r.status not in ("passed", "skipped"):
                return r.label, f"{r.status}: {r.message}"
    return None


def mutate_lab(lab: labs.Lab, max_mutants: int, seed: int, jobs: int | None, verbose: bool,
               timeout_s: float = 30.0) -> int:
    kind = lab.launch.get("kind", "direct")
    if kind not in ("direct", "mpi"):
        raise MutateError(f"lab {lab.id}: `workbook mutate` does not know launch kind '{kind}'")
    solution_s: dict = {}  # the solution's time per check and rank count (collective labs)
    if kind == "mpi":
        def first_failure(lab, binary, timeout_s):
            return _first_failure_mpi(lab, binary, timeout_s, solution_s)
    else:
        first_failure = _first_failure_direct
    solution_dir = lab.source_dir(True)
    if not lab.sources or not solution_dir.is_dir():
        raise MutateError(f"lab {lab.id}: needs solutions/{lab.id} with its source files")
    build.configure(BACKEND, verbose=verbose)
    target = lab.target(True).replace("_solution", "_mutant")
    if target not in build.targets_matching(BACKEND, r"check_\w+_mutant"):
        raise MutateError(f"the sim build has no target {target} (declared by wb_add_lab, or comm_add_lab for "
                          "the collective labs, when solutions/ exists)")
    out = ROOT / "build" / "mutate" / lab.id
    # Mutants of every source file of the lab; one file is mutated at a time, the others are the
    # solution's (the mutant target's slots, build/<backend>/mutant/<lab>/<file>).
    solutions = {name: solution_dir / name for name in lab.sources}
    slots = {name: build_dir(BACKEND) / "mutant" / lab.id / name for name in lab.sources}
    originals = {name: path.read_text() for name, path in solutions.items()}
    mutants: list[tuple[str, Path]] = []
    for name, path in solutions.items():
        sub = out / "mutants" if len(solutions) == 1 else out / "mutants" / Path(name).stem
        mutants += [(name, m) for m in generate(path, sub)]
    rng = random.Random(seed)
    order = {name: i for i, name in enumerate(lab.sources)}
    sample = sorted(rng.sample(mutants, min(max_mutants, len(mutants))),
                    key=lambda e: (order[e[0]], int(e[1].name.split(".mutant.")[1].split(".")[0])))
    shown_sources = ", ".join(relative(p) for p in solutions.values())
    print(f"{lab.id}: {len(mutants)} mutants of {shown_sources}; checking {len(sample)} (seed {seed})", flush=True)

    equivalents = load_equivalents(lab)
    binary = bin_dir(BACKEND) / target
    records = []
    survivors_dir = out / "survivors"
    shutil.rmtree(survivors_dir, ignore_errors=True)
    survivors_dir.mkdir(parents=True)
    start = time.monotonic()

    def restore() -> None:  # every slot back to its solution file
        for name, slot in slots.items():
            slot.parent.mkdir(parents=True, exist_ok=True)
            if not slot.is_file() or slot.read_text() != originals[name]:
                slot.write_text(originals[name])

    try:
        restore()
        if kind == "mpi":
            # The unmutated solution first: a check that fails on it would kill every mutant,
            # and its times set the mutants' limits.
            built = build.build(BACKEND, [target], jobs=jobs)
            if not built.ok:
                raise MutateError(f"{target} does not build with the solution:\n{built.output[-3000:]}")
            t0 = time.monotonic()
            failed = first_failure(lab, binary, timeout_s)
            if failed:
                raise MutateError(f"the unmutated solution fails {failed[0]}, so every mutant would be "
                                  f"killed:\n{failed[1]}")
            slowest = max(solution_s.items(), key=lambda e: e[1])
            print(f"the solution passes every check at every rank count ({time.monotonic() - t0:.0f} s; the "
                  f"slowest, {slowest[0][2]} with {slowest[0][0]} ranks, took {slowest[1]:.1f} s: a mutant may "
                  f"take {SLOWDOWN:g} x each check's time there, at least {timeout_s:g} s)", flush=True)
        for n, (name, path) in enumerate(sample, 1):
            t_mutant = time.monotonic()
            text = path.read_text()
            old, new, line = changed_lines(originals[name], text)
            rec = {"mutant": path.name, "file": name, "line": line, "original": old, "mutated": new}
            restore()
            slots[name].write_text(text)
            built = build.build(BACKEND, [target], jobs=jobs)
            if not built.ok:
                rec["verdict"] = "not compiled"
            else:
                failed = first_failure(lab, binary, timeout_s)
                if failed:
                    rec["verdict"] = "killed"
                    rec["by"] = failed[0]
                    rec["message"] = failed[1][:2000]
                else:
                    match = next((e for e in equivalents if e["original"] == old and e["mutant"] == new
                                  and e.get("file", name) == name), None)
                    rec["verdict"] = "equivalent" if match else "survived"
                    if match:
                        rec["why"] = match["why"]
                    diff = "".join(difflib.unified_diff(originals[name].splitlines(True), text.splitlines(True),
                                                        f"solutions/{lab.id}/{name}", path.name))
                    (survivors_dir / (path.stem + ".diff")).write_text(diff)
            rec["seconds"] = round(time.monotonic() - t_mutant, 1)
            records.append(rec)
            where = f"{name}:{line}" if len(solutions) > 1 else f"line {line}"
            shown = f"{rec['verdict']:<12} {path.name}  {where}: {new[:90]}"
            if rec.get("by"):
                shown += f"  <- {rec['by']}"
            print(f"[{n}/{len(sample)}] {shown}", flush=True)
    finally:
        restore()  # the target builds the solution again

    counts = {v: sum(r["verdict"] == v for r in records) for v in ("killed", "survived", "equivalent", "not compiled")}
    judged = counts["killed"] + counts["survived"]
    score = counts["killed"] / judged if judged else 1.0
    summary = {"lab": lab.id, "solution": ", ".join(f"solutions/{lab.id}/{f}" for f in lab.sources),
               "generated": len(mutants),
               "sampled": len(sample), "seed": seed, "date": time.strftime("%Y-%m-%d"), **counts,
               "score": round(score, 4), "seconds": round(time.monotonic() - start, 1), "mutants": records}
    (out / "report.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\n{lab.id}: {counts['killed']} killed, {counts['survived']} survived, {counts['equivalent']} equivalent "
          f"(recorded), {counts['not compiled']} not compiled of {len(sample)} sampled mutants; "
          f"score {100 * score:.1f}% of non-equivalent mutants killed")
    if counts["survived"]:
        print(f"Survivors (strengthen a check, or record why each is equivalent in "
              f"{relative(lab.directory / 'equivalent_mutants.json')}): {relative(survivors_dir)}/")
    print(f"Report: {relative(out / 'report.json')}")
    return 0
