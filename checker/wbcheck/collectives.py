"""The collective labs (09-12) under `./workbook check`: one mpirun job per rank count.

lab.json of such a lab:
    "launch": {"kind": "mpi", "ranks": [1, 2, 3, 4, 5, 8],
               "tcp": {"ranks": 3, "filter": "Correctness.RingAllreduceFloatSum"},
               "stall_s": 5, "start_limit_s": 120}
A check's own "launch" object overrides these fields for that check (e.g. a measurement
meaningful only at some rank counts: {"ranks": [2, 4]}).

Every check of the lab runs in one mpirun job per rank count (plus one over TCP on loopback
for the checks matching the tcp filter), rather than one job per check and rank count: a lab
pays process start once per rank count. checker/mpi_launch.py keeps per-check results, fails
the check that hangs or crashes with the rank and the call named, and runs the remaining
checks in a new job. A deadlock (every rank blocked, none moving for stall_s seconds) ends
in seconds, not at the time limit. A check's time limit counts from when every rank has
started; the start itself (MPI_Init, each rank's CUDA context, the communicator) has its own
limit, start_limit_s (default mpi_launch.DEFAULT_START_LIMIT_S).

Each check is reported once, with its rank counts grouped ("ranks 1,2,3,4,5,8 + tcp 3"), its
details only for the rank counts that failed.
"""

from __future__ import annotations

import fnmatch
import re
import time
from typing import Callable

import mpi_launch

from . import runner
from .labs import Lab
from .project import ROOT

_STATUS = {"passed": runner.PASSED, "skipped": runner.NOT_MEASURED}


def _configs(lab: Lab, check: str) -> list[tuple[int, bool]]:
    cfg = lab.launch_for(check)
    jobs = [(int(n), False) for n in cfg.get("ranks", mpi_launch.DEFAULT_RANKS)]
    tcp = cfg.get("tcp")
    if tcp and any(fnmatch.fnmatchcase(check, p) for p in str(tcp.get("filter", "*")).split(":")):
        jobs.append((int(tcp.get("ranks", 2)), True))
    return jobs


def _phrase(configs: list[tuple[int, bool]]) -> str:
    """"1, 2 and 4 ranks", "3 ranks over tcp", "1 rank and 3 ranks over tcp"."""
    def numbers(ns):
        ns = [str(n) for n in ns]
        return ns[0] if len(ns) == 1 else ", ".join(ns[:-1]) + " and " + ns[-1]
    parts = []
    for over_tcp in (False, True):
        ns = [n for n, tcp in configs if tcp == over_tcp]
        if ns:
            parts.append(f"{numbers(ns)} rank{'s' if ns != [1] else ''}{' over tcp' if over_tcp else ''}")
    return " and ".join(parts)


def _ranks_label(configs: list[tuple[int, bool]]) -> str:
    plain = [str(n) for n, tcp in configs if not tcp]
    over_tcp = [str(n) for n, tcp in configs if tcp]
    text = "ranks " + ",".join(plain) if plain else ""
    if over_tcp:
        text += (" + " if text else "") + "tcp " + ",".join(over_tcp)
    return text


_RANKS_PREFIX = re.compile(r"^ranks? \d+(?:(?:, | and )\d+)*: ", re.M)


def _clean(message: str) -> str:
    """A rank's message without GoogleTest's bare "Failed" line and with paths relative to the
    repository."""
    lines = message.strip().splitlines()
    if lines and lines[0].strip() == "Failed":
        lines = lines[1:]
    return "\n".join(lines).replace(str(ROOT) + "/", "").strip()


def group_results(lab: Lab, check: str, outcomes: dict) -> runner.CheckResult:
    """One row for @p check from its per-configuration results {(ranks, tcp): mpi_launch.CheckResult};
    a failure that comes from an earlier lab's unfinished function says so first."""
    return runner.name_earlier_lab(lab.id, _group_results(lab, check, outcomes))


def _group_results(lab: Lab, check: str, outcomes: dict) -> runner.CheckResult:
    spec = lab.spec(check)
    configs = list(outcomes)
    row = runner.CheckResult(lab=lab.id, name=check, status=runner.PASSED, weight=spec.weight, hint=spec.hint,
                             duration_s=sum(r.time_s for r in outcomes.values()))
    if not outcomes:
        row.status = runner.FAILED
        row.message = "no rank count to run this check with: its \"launch\" object in lab.json lists none"
        return row
    statuses = {c: _STATUS.get(r.status, runner.FAILED) for c, r in outcomes.items()}
    failed = [c for c in configs if statuses[c] == runner.FAILED]
    skipped = [c for c in configs if statuses[c] == runner.NOT_MEASURED]
    if failed:
        row.status = runner.FAILED
    elif skipped:
        row.status = runner.NOT_MEASURED
    # The measured value of each configuration that reported one; the threshold is the check's.
    measured = [(c, str(r.properties.get("measured", ""))) for c, r in outcomes.items()
                if r.properties.get("measured")]
    row.threshold = spec.passes or next((str(r.properties["threshold"]) for r in outcomes.values()
                                         if r.properties.get("threshold")), "")
    row.hint = next((str(r.properties["hint"]) for r in outcomes.values() if r.properties.get("hint")), row.hint)
    shown = failed or skipped or configs
    if measured and not (failed or skipped):
        values = {m for _, m in measured}
        if len(values) == 1:           # the same at every rank count: say it once
            row.measured = f"{_ranks_label(configs)}: {measured[0][1]}"
        elif row.group == "Performance":  # a figure per rank count is the point
            row.measured = "; ".join(f"{'tcp ' if tcp else ''}n={n}: {m}" for (n, tcp), m in measured)
        else:                          # the largest job's value; every one passed
            (n, tcp), m = max(measured, key=lambda cm: (cm[0][0], not cm[0][1]))
            row.measured = f"{_ranks_label(configs)} (n={n}: {m})"
    else:
        row.measured = _ranks_label(shown)
        if failed:
            row.measured = "failed with " + row.measured
    if failed or skipped:
        # One paragraph per distinct message, naming the configurations that gave it.
        # The same mistake at every rank count differs only in which ranks it names: grouped by
        # the message without its "rank 0:" / "ranks 0, 1:" prefixes, shown as the first one says it.
        by_message: dict[str, list] = {}
        text: dict[str, str] = {}
        for c in shown:
            message = _clean(outcomes[c].message) or outcomes[c].status
            key = _RANKS_PREFIX.sub("", message)
            by_message.setdefault(key, []).append(c)
            text.setdefault(key, message)
        parts = []
        for key, cs in by_message.items():
            parts.append(f"with {_phrase(cs)}: {text[key]}")
        ok = [c for c in configs if statuses[c] == runner.PASSED]
        if ok:
            parts.append("passed with " + _phrase(ok))
        row.message = "\n".join(parts)
    return row


def run_lab(lab: Lab, binary, checks: list[str] | None = None, timeout_s: float | None = None,
            on_result: Callable[[runner.CheckResult], None] | None = None,
            on_progress: Callable[[str], None] | None = None) -> list[runner.CheckResult]:
    """The "mpi" lab runner of checker/wbcheck/runner.py (see the module's text)."""
    try:
        names = checks if checks is not None else mpi_launch.list_tests(str(binary))
    except (RuntimeError, OSError) as e:
        raise runner.BinaryError(str(e)) from None
    plan: dict[tuple[int, bool], list[str]] = {}
    for check in names:
        for config in _configs(lab, check):
            plan.setdefault(config, []).append(check)
    stall = lab.launch.get("stall_s", mpi_launch.DEFAULT_STALL_S)
    start_limit = float(lab.launch.get("start_limit_s", mpi_launch.DEFAULT_START_LIMIT_S))

    def limit(name: str) -> float:
        return timeout_s if timeout_s is not None else lab.timeout_for(name)

    outcomes: dict[str, dict] = {check: {} for check in names}
    order = sorted(plan, key=lambda c: (c[1], c[0]))
    for k, (n, tcp) in enumerate(order):
        if on_progress:
            on_progress(f"{len(plan[(n, tcp)])} checks with {_phrase([(n, tcp)])}")
        started = time.monotonic()
        try:
            for r in mpi_launch.run_mpi_checks(str(binary), n, plan[(n, tcp)], time_limit_s=limit, tcp=tcp,
                                               stall_s=stall, start_limit_s=start_limit):
                outcomes[r.name][(n, tcp)] = r
        except KeyboardInterrupt as e:  # mpi_launch has killed the job's processes
            _interrupted(lab, names, plan, outcomes, order[k:], time.monotonic() - started,
                         isinstance(e, runner.Terminated), on_result)
    results = []
    for check in names:
        row = group_results(lab, check, outcomes[check])
        results.append(row)
        if on_result:
            on_result(row)
    return results


def _interrupted(lab: Lab, names, plan, outcomes, left, seconds: float, terminated: bool, on_result):
    """The run was stopped during the job of left[0] (its results are lost with it; the jobs after it
    never started). A check whose jobs had all finished is reported as usual; one that had already
    failed with some rank count is reported failed with those; every other one fails as not
    finished, naming the rank counts it had finished and those it had not run."""
    unfinished = []
    for check in names:
        due = [c for c in left if check in plan[c]]
        done = list(outcomes[check])
        row = group_results(lab, check, outcomes[check]) if done or not due else None
        if not due or (done and row.status == runner.FAILED):
            if due:
                row.message += f"\n(not run with {_phrase(due)}: the run was stopped)"
            if on_result:
                on_result(row)
            continue
        parts = []
        if left[0] in due:
            parts.append(f"the job with {_phrase([left[0]])} had run {seconds:.0f} s")
        if [c for c in due if c != left[0]]:
            parts.append("not run with " + _phrase([c for c in due if c != left[0]]))
        if done:
            parts.append("finished with " + _phrase(done))
        unfinished.append(runner.interrupted_row(lab, check, seconds, terminated, ": " + "; ".join(parts)))
    raise runner.Interrupted(unfinished, terminated)


runner.register_lab_runner("mpi", run_lab)
