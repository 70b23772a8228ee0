"""`./workbook`: check labs, run the project's tests, list labs, build docs, run benchmarks."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import build, deps, labs, prerequisites, progress, provided, report, runner, sandbox
from .project import ROOT, bin_dir, build_dir, gpu_visible, relative, resolve_backend, state_dir

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A problem with the command line or the environment, reported without a traceback."""


def _jobs(args) -> int | None:
    return args.jobs if getattr(args, "jobs", None) else None


def _prepare(command: str, backend: str, args, needs_mpi: bool = False, plot: bool = False,
             provided: str = "", force: bool = False) -> None:
    deps.ensure(deps.required(command, backend, needs_mpi, plot), allow_install=not args.no_install)
    build.configure(backend, verbose=args.verbose, provided=provided, force=force)


# ---- mutate ----------------------------------------------------------------------------------

def cmd_mutate(args) -> int:
    from . import mutate
    _prepare("check", "sim", args)
    try:
        for lab in labs.select_labs(args.labs):
            mutate.mutate_lab(lab, args.max, args.seed, _jobs(args), args.verbose, args.timeout)
    except mutate.MutateError as e:
        raise UsageError(str(e)) from None
    return EXIT_OK


# ---- check -----------------------------------------------------------------------------------

def cmd_check(args) -> int:
    backend = resolve_backend(args.backend)
    selected = labs.select_labs(args.labs)
    if not selected:
        raise UsageError("this tree has no labs with checks (checker/labs/NN-name/lab.json)")
    variant = "solutions" if args.solutions else "labs"
    if args.solutions:
        missing = [lab.id for lab in selected if not lab.source_dir(True).is_dir()]
        if missing:
            raise UsageError(f"--solutions: solutions/{missing[0]} is not in this tree (student copies of the "
                             "workbook do not include solutions)")
    if backend == "cuda" and not gpu_visible():
        raise UsageError("the cuda backend runs the checks on an NVIDIA GPU, and `nvidia-smi -L` lists none. "
                         "Use --backend sim (or auto), or only build: cmake --preset cuda && "
                         "cmake --build --preset cuda")
    provided_dir = None
    if args.provided:
        if args.solutions:
            raise UsageError("--provided replaces earlier labs in the learner's binaries (labs/); the solutions' "
                             "binaries always link the earlier labs' solutions. Leave out one of them.")
        provided_dir = Path(args.provided).resolve()
        try:
            provided.read_manifest(provided_dir)
        except provided.ProvidedError as e:
            raise UsageError(str(e)) from None
    _prepare("check", backend, args, needs_mpi=any("mpi" in lab.requires for lab in selected),
             provided=str(provided_dir) if provided_dir else "")

    defined = set(build.targets_matching(backend, r"check_\w+"))
    absent = {lab.id for lab in selected if lab.target(args.solutions) not in defined}
    targets = [lab.target(args.solutions) for lab in selected if lab.id not in absent]
    broken: dict[str, str] = {}
    if targets and build.targets_matching(backend, r"wb_sandbox_probe"):
        targets.append("wb_sandbox_probe")
    if targets:
        names = ", ".join(lab.id.split("-")[0] for lab in selected if lab.id not in absent)
        print(f"Building the checks of lab(s) {names} ({backend}) ...", flush=True)
        result = build.build(backend, targets, _jobs(args), args.verbose, label=f"Building ({backend})")
        if not result.ok:
            for lab in selected:  # find out which labs do not compile; grade the others
                if lab.id in absent:
                    continue
                progress.STATUS.show(f"Finding which labs compile: {lab.id}")
                one = build.build(backend, [lab.target(args.solutions)], _jobs(args), verbose=False)
                if not one.ok:
                    broken[lab.id] = build.compiler_errors(one.output) or "the build failed (run with --verbose)"
            progress.STATUS.clear()

    start = time.monotonic()
    table = report.Table(verbose=args.verbose)
    sandbox.protect_runner()
    sandbox.configure(ROOT, build_dir(backend), [args.results, args.junit])
    print(f"\nChecking {variant}/ on the {backend} backend", flush=True)
    print(sandbox.header_line(sandbox.probe(bin_dir(backend) / "wb_sandbox_probe")), flush=True)
    built = [lab for lab in selected if lab.id not in absent and lab.id not in broken]
    in_process = [lab.id.split("-")[0] for lab in built
                  if not sandbox.is_split(bin_dir(backend) / lab.target(args.solutions))]
    if in_process:
        print(f"Not sandboxed: the checks of lab(s) {', '.join(in_process)} run in the lab's own process on this "
              "backend, where a determined submission could forge its verdict (docs/concepts/checking.md).",
              flush=True)
    print(flush=True)
    # Without a lab named, a lab whose checks all reach only the skeleton ("not implemented
    # yet") gets one line; a lab the learner has started (or named) gets every row.
    overview = not args.labs
    per_lab: dict[str, list[runner.CheckResult]] = {}
    stopped: runner.Interrupted | None = None  # Ctrl-C or SIGTERM: report what finished, then stop
    stopped_in = ""
    for lab in selected:
        rows = per_lab.setdefault(lab.id, [])
        view = _LabView(table, lab, full=not overview or args.verbose)

        def add(row, rows=rows, view=view):
            view.add(row)
            rows.append(row)

        try:
            if lab.id in absent:
                needs = (" It needs Open MPI (openmpi-bin libopenmpi-dev) and a build configured with "
                         "WB_BUILD_COLLECTIVES=ON (the default)." if "mpi" in lab.requires else "")
                rows += _build_failure_rows(
                    lab, backend, variant,
                    f"the {backend} build defines no target {lab.target(args.solutions)}.{needs}",
                    view, first="{variant}/{lab} is not part of this build, so no check of this lab can run: ",
                    hint=f"Reconfigure after installing what the lab needs: rm -rf build/{backend}")
            elif lab.id in broken:
                rows += _build_failure_rows(lab, backend, variant, broken[lab.id], view)
            else:
                binary = bin_dir(backend) / lab.target(args.solutions)
                label = f"{lab.number} {lab.name}"
                # Earlier labs that come from a provided build (--provided), and earlier labs'
                # functions this lab calls that are still the skeleton's: said at once, and the
                # failures they cause say so in their first line.
                skip: set[str] = set()
                if provided_dir:
                    entries = provided.linked(lab, backend)
                    skip = provided.provided_uses(entries)
                    for line in provided.lines(lab, entries, backend, provided_dir):
                        print("note: " + line, flush=True)
                missing = prerequisites.unfinished(lab, variant, skip=skip)
                if missing and view.started:
                    for u in missing:
                        print("note: " + u.line(lab.number))
                if missing:
                    def add(row, rows=rows, view=view, lab=lab, missing=missing):
                        prerequisites.explain(lab, row, missing, variant)
                        view.add(row)
                        rows.append(row)
                try:
                    # Rows are kept as each check ends (on_result), so that a stopped run keeps them.
                    runner.run_lab_checks(
                        lab, binary, on_result=add,
                        on_progress=lambda text, label=label: progress.STATUS.show(f"{label}: {text}", timed=True))
                except runner.BinaryError as e:
                    add(runner.CheckResult(lab=lab.id, name="Build.CheckBinary", status=runner.FAILED,
                                           weight=sum(c.weight for c in lab.checks_for(backend)) or 1.0,
                                           message=f"the check binary could not run: {e}"))
                except runner.Interrupted as e:
                    for row in e.rows:
                        add(row)
                    stopped = e
                progress.STATUS.clear()
        except KeyboardInterrupt as e:  # between two checks (listing a binary's checks, starting a job)
            progress.STATUS.clear()
            stopped = runner.Interrupted([], isinstance(e, runner.Terminated))
        view.done(rows)
        if stopped:
            stopped_in = lab.id
            break
    results = [row for lab in selected for row in per_lab.get(lab.id, [])]
    elapsed = time.monotonic() - start

    gradescope = report.gradescope_results(results, backend, variant, elapsed)
    default_results = state_dir(backend) / "results.json"
    report.write_json(default_results, gradescope)
    if args.results:
        report.write_json(Path(args.results), gradescope)
    if args.junit:
        report.write_junit(Path(args.junit), results, backend)
    report.update_last_results(state_dir(backend) / "last-check.json", results, variant)
    written = [relative(Path(p)) for p in (args.results or default_results, args.junit) if p]
    # The end of the output is always the summary: a line per lab, the score, where the
    # report is, and what to do next.
    print(f"\nSummary ({variant}/, {backend} backend, {elapsed:.0f} s)")
    for lab in selected:
        if lab.id in per_lab:
            print("  " + report.lab_line(lab.id, per_lab[lab.id], table.width - 2))
    print(report.summary_line(results))
    if stopped:
        unreached = [lab.number for lab in selected if lab.id not in per_lab]
        print(f"Stopped by {'SIGTERM' if stopped.terminated else 'Ctrl-C'} after {elapsed:.0f} s, in lab "
              f"{stopped_in.split('-')[0]}: the checks that had finished are above and in the report"
              + (f"; not checked: lab(s) {', '.join(unreached)}" if unreached else "") + ".")
    if any(r.status == runner.NOT_MEASURED for r in results):
        print("NOT MEASURED checks count as not passed: their backend could not measure them.")
    print("Full report: " + ", ".join(written))
    if stopped:
        again = " ".join(lab.number for lab in selected if lab.id == stopped_in or lab.id not in per_lab)
        print(f"Next: run ./workbook check {again}{' --solutions' if args.solutions else ''} again with time to finish.")
    else:
        print(_next_step(selected, per_lab, args))
    if stopped:
        return 143 if stopped.terminated else 130
    return EXIT_OK if results and all(r.passed for r in results) else EXIT_FAILED


class _LabView:
    """The rows of one lab in the table: all of them, or (overview) only once one of them shows
    that the lab was started; a lab that was not gets one line when it ends."""

    def __init__(self, table, lab, full: bool):
        self.table, self.lab = table, lab
        self.pending: list[runner.CheckResult] = []
        self.started = full

    def add(self, row) -> None:
        if not self.started and report.not_started(row):
            self.pending.append(row)
            return
        with progress.STATUS.lock:  # the status line's ticker must not draw inside a row
            progress.STATUS.erase()
            if not self.started:
                self.started = True
                for r in self.pending:
                    self.table.add(r)
                self.pending = []
            self.table.add(row)

    def done(self, rows) -> None:
        if not self.started:
            progress.STATUS.note(report.lab_line(self.lab.id, rows, self.table.width)
                                 + " (its checks: ./workbook check " + self.lab.number + ")")


def _next_step(selected, per_lab, args) -> str:
    """One line: what to do next, for the first lab (in the selected order) not yet passing."""
    for lab in selected:
        rows = per_lab[lab.id]
        if rows and all(r.passed for r in rows):
            continue
        if args.solutions:
            return f"Next: lab {lab.number}'s solution fails; ./workbook check {lab.number} --solutions --verbose"
        if all(report.not_started(r) for r in rows):
            return f"Next: start with labs/{lab.id}/README.md, then ./workbook check {lab.number}"
        first = next((r for r in rows if not r.passed), rows[0])  # a started lab's rows are shown above
        if "does not compile" in first.message.split("\n", 1)[0]:
            return f"Next: fix lab {lab.number}'s first compiler error (above), then ./workbook check {lab.number}"
        return f"Next: lab {lab.number}, {first.name} (details above), then ./workbook check {lab.number}"
    return "Every selected check passed."


def _build_failure_rows(lab, backend, variant, errors, table,
                        first="{variant}/{lab} does not compile, so no check of this lab can run:\n",
                        hint="Fix the first compiler error first; later ones often follow from it.") -> list:
    """One failed row per check of a lab that could not be built, so that the score keeps
    its maximum; the first row carries the reason."""
    specs = lab.checks_for(backend) or [labs.CheckSpec(name="Build.Compile")]
    rows = []
    for i, spec in enumerate(specs):
        message = (first.format(variant=variant, lab=lab.id) + errors if i == 0
                   else "not run: the lab could not be built (see above)")
        row = runner.CheckResult(lab=lab.id, name=spec.name, status=runner.FAILED, weight=spec.weight,
                                 message=message, hint=hint if i == 0 else "")
        table.add(row)
        rows.append(row)
    return rows


# ---- provide ---------------------------------------------------------------------------------

def cmd_provide(args) -> int:
    backend = resolve_backend(args.backend)
    selected = labs.select_labs(args.labs)
    users = provided.users()
    wanted = [lab for lab in selected if lab.number in users]
    unused = [lab.number for lab in selected if lab.number not in users]
    if unused:
        callers = "; ".join(f"lab {n} by lab(s) {', '.join(u)}" for n, u in sorted(users.items()))
        raise UsageError(f"no later lab calls lab {', '.join(unused)}, so there is nothing of it to provide. "
                         f"Earlier labs that later labs call: {callers}.")
    missing = [lab.id for lab in wanted if not lab.source_dir(True).is_dir()]
    if missing:
        raise UsageError(f"solutions/{missing[0]} is not in this tree: a provided build is made from the "
                         "reference, on the instructor's copy of the workbook")
    # Configured again so that the interfaces CMake records are those of the tree as it is now.
    _prepare("check", backend, args, force=True)
    offers = provided.offers(backend, [lab.number for lab in wanted])
    if not offers:
        raise UsageError(f"the {backend} build offers no library of lab(s) {', '.join(l.number for l in wanted)} "
                         f"(build/{backend}/provided-status.json)")
    print(f"Building the reference of lab(s) {', '.join(l.number for l in wanted)} as libraries ({backend}) ...",
          flush=True)
    result = build.build(backend, [o.target for o in offers], _jobs(args), args.verbose,
                         label=f"Building ({backend})")
    if not result.ok:
        raise UsageError("the reference did not build:\n" + (build.compiler_errors(result.output) or result.output))
    out = Path(args.out).resolve()
    provided.write(out, offers)
    for o in offers:
        print(f"  {o.use} ({o.flavour}): {relative(out / (o.use + '.' + o.flavour + '.a'))}")
    later = sorted({u for lab in wanted for u in users[lab.number]})
    print(f"Wrote {relative(out)}/{provided.MANIFEST}. It holds no source; give the folder to learners or the "
          f"grader, who check lab(s) {', '.join(later)} with: ./workbook check {later[0]} --provided {relative(out)}")
    return EXIT_OK


# ---- test ------------------------------------------------------------------------------------

def cmd_test(args) -> int:
    backend = resolve_backend(args.backend) if args.backend else "sim"
    _prepare("test", backend, args)
    print(f"Building everything ({backend}) ...", flush=True)
    result = build.build(backend, None, _jobs(args), args.verbose, label=f"Building ({backend})")
    if not result.ok:
        build.print_failure(result)
        print(f"The build failed ({backend} backend); no tests were run.", file=sys.stderr)
        return EXIT_FAILED
    cmd = ["ctest", "--test-dir", str(build_dir(backend)), "--output-on-failure",
           "-j", str(args.jobs or os.cpu_count() or 1), *args.ctest_args]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL).returncode


# ---- list ------------------------------------------------------------------------------------

def cmd_list(args) -> int:
    present = {lab.id: lab for lab in labs.all_labs()}
    last = {}
    for backend in ("sim", "cuda"):
        path = state_dir(backend) / "last-check.json"
        if path.is_file():
            try:
                last[backend] = json.loads(path.read_text())
            except ValueError:
                pass
    for number, title in labs.STAGES.items():
        print(f"Stage {number}: {title}")
        for lab in sorted((lab for lab in present.values() if lab.stage == number), key=lambda lab: lab.id):
            status = []
            for backend, data in last.items():
                for variant, r in data.get(lab.id, {}).items():
                    status.append(f"{backend}/{variant}: {r['passed']}/{r['checks']} passed ({r['time']})")
            print(f"  {lab.id:<28} {lab.title}")
            print(f"  {'':<28} last check: {'; '.join(status) if status else 'never checked'}")
    return EXIT_OK


# ---- docs ------------------------------------------------------------------------------------

DOC_INPUTS = ("docs", "README.md", "labs", "common/wb/include", "common/cusim/include/cusim", "common/comm/include",
              "checker/comm/include", "checker/support")


def cmd_docs(args) -> int:
    deps.ensure(deps.required("docs", None), allow_install=not args.no_install)
    out = ROOT / "build" / "docs"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "warnings.log"
    inputs = [p for p in DOC_INPUTS if (ROOT / p).exists()]
    env = dict(os.environ,
               WB_DOCS_INPUT=" ".join(inputs),
               WB_DOCS_OUTPUT=str(out),
               WB_DOCS_WARN_LOG=str(log),
               WB_DOCS_HAVE_DOT="YES" if shutil.which("dot") else "NO")
    cmd = ["doxygen", "docs/Doxyfile"]
    print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          stdout=None if args.verbose else subprocess.DEVNULL)
    warnings = log.read_text(errors="replace").strip() if log.is_file() else ""
    if proc.returncode != 0 or warnings:
        print(warnings or f"doxygen exited with status {proc.returncode}", file=sys.stderr)
        print(f"The documentation has {len(warnings.splitlines())} warning line(s); see {relative(log)}.",
              file=sys.stderr)
        return EXIT_FAILED
    print(f"Documentation: {relative(out / 'html' / 'index.html')} (no warnings)")
    return EXIT_OK


# ---- handouts --------------------------------------------------------------------------------

def cmd_handouts(args) -> int:
    from . import declarations, handouts
    try:
        diffs = handouts.sync(write=not args.check)
    except (handouts.HandoutError, declarations.DeclarationError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    if args.check:
        for d in diffs:
            print(d, end="" if d.endswith("\n") else "\n")
        if diffs:
            print(f"{len(diffs)} handout(s) disagree with their checks' WB_CHECK declarations (the diff above). The "
                  "declarations are the checks: run ./workbook handouts to rewrite the tables from them.",
                  file=sys.stderr)
            return EXIT_FAILED
        print(f"{len(handouts.handouts())} handouts' tables match their checks' declarations")
        return EXIT_OK
    print(f"{len(diffs)} handout(s) rewritten" if diffs else "every handout's table already matches its declarations")
    return EXIT_OK


# ---- bench -----------------------------------------------------------------------------------

def cmd_bench(args) -> int:
    backend = resolve_backend(args.backend)
    _prepare("bench", backend, args, plot=args.plot)
    available = build.targets_matching(backend, r"bench_[A-Za-z0-9_]+")
    # Lab numbers after a benchmark's name are its arguments: `./workbook bench kernels 03 07`, or
    # a lab's part of it: `kernels 07-dgrad`.
    bench_args: dict[str, list[str]] = {}
    if args.names:
        wanted = []
        for name in args.names:
            if re.fullmatch(r"[0-9]+(-[a-z0-9]+)?", name) and wanted:
                bench_args.setdefault(wanted[-1], []).append(name)
                continue
            target = name if name.startswith("bench_") else f"bench_{name}"
            if target not in available:
                known = ", ".join(t[len("bench_"):] for t in available) or "none"
                raise UsageError(f"no benchmark '{name}' in the {backend} build; available: {known}")
            wanted.append(target)
    else:
        wanted = available
    if not wanted:
        print(f"No benchmarks in the {backend} build.")
        return EXIT_OK
    result = build.build(backend, wanted, _jobs(args), args.verbose, label=f"Building ({backend})")
    if not result.ok:
        build.print_failure(result)
        return EXIT_FAILED
    status = EXIT_OK
    results = build_dir(backend) / "bench"
    results.mkdir(parents=True, exist_ok=True)
    for target in wanted:
        print(f"== {target} ({backend}) ==", flush=True)
        # The text results are kept beside the CSV a benchmark may write (WB_BENCH_CSV).
        text, csv = results / f"{target}.txt", results / f"{target}.csv"
        csv.unlink(missing_ok=True)
        env = dict(os.environ, WB_BENCH_CSV=str(csv))
        with open(text, "w") as log:
            proc = subprocess.Popen([str(bin_dir(backend) / target)] + bench_args.get(target, []), cwd=ROOT, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                log.write(line)
            rc = proc.wait()
        if rc != 0:
            print(f"{target} {runner.describe_exit(rc)}", file=sys.stderr)
            status = EXIT_FAILED
        print(f"results: {relative(text)}" + (f", {relative(csv)}" if csv.exists() else ""))
        if args.plot:
            status = max(status, _plot_bench(target, csv))
    return status


def _plot_bench(target: str, csv: Path) -> int:
    """Draws a benchmark's CSV with its plot script (bench/<name>/plot.py) beside the CSV."""
    script = ROOT / "bench" / target[len("bench_"):] / "plot.py"
    if not script.exists():
        print(f"--plot: {target} has no plot script ({relative(script)}); nothing drawn")
        return EXIT_OK
    if not csv.exists():
        print(f"--plot: {target} wrote no CSV ({relative(csv)}); nothing drawn", file=sys.stderr)
        return EXIT_FAILED
    # matplotlib may live in the system's Python only (Debian's python3-matplotlib).
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not Path(python).exists():
            continue
        probe = subprocess.run([python, "-c", "import matplotlib"], capture_output=True)
        if probe.returncode == 0:
            png = csv.with_suffix(".png")
            rc = subprocess.run([python, str(script), str(csv), str(png)], cwd=ROOT, stdout=subprocess.DEVNULL).returncode
            if rc == 0:
                print(f"plot: {relative(png)}")
                return EXIT_OK
            print(f"--plot: {relative(script)} failed ({runner.describe_exit(rc)})", file=sys.stderr)
            return EXIT_FAILED
    print("--plot: matplotlib is missing: install python3-matplotlib (apt-get) or matplotlib (pip)", file=sys.stderr)
    return EXIT_FAILED


# ---- run / sanitize / profile: any standalone CUDA program through cusim ---------------------

def cmd_standalone(args) -> int:
    from . import standalone
    _prepare(args.command, "sim", args)
    try:
        return standalone.run(args.command, args.files_and_args, getattr(args, "tool", None), _jobs(args),
                              args.verbose, include_dirs=args.include_dirs)
    except standalone.StandaloneError as e:
        print(f"workbook {args.command}: {e}", file=sys.stderr)
        return EXIT_ERROR


# ---- main ------------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--no-install", action="store_true",
                        help="never install missing system packages; only say which are missing")
    common.add_argument("--verbose", "-v", action="store_true", help="show build commands and all details")
    jobs = argparse.ArgumentParser(add_help=False)
    jobs.add_argument("-j", "--jobs", type=int, help="parallel build jobs (default: the build tool's choice)")
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", choices=("auto", "sim", "cuda"),
                         help="sim: on the CPU through cusim; cuda: on an NVIDIA GPU; auto (default): cuda "
                              "when a GPU is visible, else sim")

    p = argparse.ArgumentParser(prog="workbook", description="CUDA & Collectives Workbook: check your labs, "
                                "run the project's tests, list labs, build the docs, run benchmarks.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("check", parents=[common, jobs, backend], help="build and check labs",
                       description="Build and check labs. Each check runs in its own process with a time "
                                   "limit; exit status 0 only if every selected check passed.")
    c.add_argument("labs", nargs="*", metavar="LAB", help="lab number (01) or name (saxpy); default: all")
    c.add_argument("--solutions", action="store_true", help="check solutions/ instead of labs/")
    c.add_argument("--results", metavar="FILE", help="also write Gradescope results.json to FILE")
    c.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    c.add_argument("--provided", metavar="DIR",
                   help="link the earlier labs that a lab calls (lab 08: labs 05 and 06) from DIR, a provided "
                        "build of their reference (./workbook provide), instead of your own labs/")
    c.set_defaults(func=cmd_check)

    pr = sub.add_parser("provide", parents=[common, jobs, backend],
                        help="build earlier labs' reference as libraries, for a later lab assigned on its own",
                        description="Build the reference of earlier labs (solutions/) as static libraries, which "
                                    "hold no source, into DIR with a manifest. Learners and graders then check a "
                                    "later lab without the earlier ones: ./workbook check 08 --provided DIR.")
    pr.add_argument("labs", nargs="+", metavar="LAB", help="an earlier lab that later labs call (05 for labs 07, "
                                                           "08 and 12)")
    pr.add_argument("--out", required=True, metavar="DIR", help="where to write the libraries and provided.json "
                                                                 "(added to what DIR already has)")
    pr.set_defaults(func=cmd_provide)

    t = sub.add_parser("test", parents=[common, jobs, backend],
                       help="the project's own tests (ctest; sim backend unless --backend)")
    t.add_argument("ctest_args", nargs=argparse.REMAINDER, metavar="-- CTEST_ARGS",
                   help="passed to ctest, e.g. -- -R checker")
    t.set_defaults(func=cmd_test)

    sub.add_parser("list", parents=[common], help="the labs by stage, with the result of the last check") \
        .set_defaults(func=cmd_list)
    sub.add_parser("docs", parents=[common], help="Doxygen HTML into build/docs/html (fails on warnings)") \
        .set_defaults(func=cmd_docs)

    h = sub.add_parser("handouts", parents=[common],
                       help="rewrite the handouts' \"What the checker verifies\" tables from the WB_CHECK declarations",
                       description="Rewrite each generated table of labs/NN-name/README.md from the WB_CHECK "
                                   "declarations of the checks it lists (their .passes text, limits written in).")
    h.add_argument("--check", action="store_true", help="write nothing; exit status 1 and the difference when a "
                                                        "table disagrees with its declarations")
    h.set_defaults(func=cmd_handouts)

    b = sub.add_parser("bench", parents=[common, jobs, backend], help="build and run benchmarks")
    b.add_argument("names", nargs="*", metavar="NAME", help="benchmark bench_NAME (lab numbers after it are its arguments: kernels 03 07-dgrad); "
                                                        "default: all")
    b.add_argument("--plot", action="store_true",
                   help="also draw the results (bench/NAME/plot.py, matplotlib) beside the text and CSV in "
                        "build/BACKEND/bench/")
    b.set_defaults(func=cmd_bench)

    m = sub.add_parser("mutate", parents=[common, jobs],
                       help="mutation score of a lab's checks: mutants of its solution, killed or not (sim)",
                       description="Generate mutants of a lab's reference solution (universalmutator), build "
                                   "and check each on the sim backend, and report killed / survived / "
                                   "equivalent / not compiled with the surviving diffs. Slow: not part of CI.")
    m.add_argument("labs", nargs="+", metavar="LAB", help="lab number (01) or name (saxpy)")
    m.add_argument("--max", type=int, default=100, metavar="N", help="check at most N sampled mutants (default 100)")
    m.add_argument("--seed", type=int, default=1, metavar="S", help="the sample's random seed (default 1)")
    m.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="time limit of each check on a mutant, at most the lab's own (default 30 s)")
    m.set_defaults(func=cmd_mutate)

    for name, text in (("run", "build FILE.cu (a CUDA program with its own main) through cusim and run it on the CPU"),
                       ("sanitize", "run FILE.cu under cusim analysis, like compute-sanitizer; exit status 1 on errors"),
                       ("profile", "run FILE.cu and print per-kernel and per-line memory metrics, like Nsight Compute")):
        r = sub.add_parser(name, parents=[common, jobs], help=text, description=text)
        if name == "sanitize":
            r.add_argument("--tool", default="memcheck",
                           choices=("memcheck", "racecheck", "initcheck", "synccheck", "all"),
                           help="which checker (default memcheck, as compute-sanitizer)")
        r.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                       help="also search DIR for #include files, as nvcc -I (before the files)")
        r.add_argument("files_and_args", nargs=argparse.REMAINDER, metavar="FILE.cu [-- ARGS]",
                       help="the program's source files, then -- and its arguments")
        r.set_defaults(func=cmd_standalone)
    return p


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `./workbook check | head` ends quietly
    # SIGTERM (`timeout`, a grader's time limit) is handled as Ctrl-C: running checks are killed
    # with their process groups, and `check` still reports and writes what finished.
    signal.signal(signal.SIGTERM, _terminate)
    args = parser().parse_args(argv)
    if getattr(args, "ctest_args", None) and args.ctest_args[0] == "--":
        args.ctest_args = args.ctest_args[1:]
    try:
        return args.func(args)
    except (UsageError, labs.LabError, deps.DependencyError, build.BuildError, ValueError) as e:
        print(f"workbook {args.command}: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as e:
        print("\nterminated (SIGTERM)" if isinstance(e, runner.Terminated) else "\ninterrupted", file=sys.stderr)
        return 143 if isinstance(e, runner.Terminated) else 130


def _terminate(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the report must not be cut short by a second one
    raise runner.Terminated()
