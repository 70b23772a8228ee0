"""Presenting check results: the table, Gradescope results.json, JUnit XML, last results."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from .runner import FAILED, NOT_MEASURED, PASSED, CheckResult

LABELS = {PASSED: "PASS", FAILED: "FAIL", NOT_MEASURED: "NOT MEASURED"}
DETAIL_LINES = 14


def _use_color(stream) -> bool:
    return stream.isatty() and os.environ.get("NO_COLOR") is None and os.environ.get("TERM") != "dumb"


class Table:
    """Prints one table of results, a row as each check finishes, details under failures."""

    COLUMNS = (("LAB", 4), ("CHECK", 40), ("RESULT", 12), ("MEASURED", 36), ("THRESHOLD", 0))

    def __init__(self, stream=None, verbose: bool = False):
        self.stream = stream or sys.stdout
        self.verbose = verbose
        self.color = _use_color(self.stream)
        self.width = max(80, min(160, shutil.get_terminal_size((120, 24)).columns))
        self.header_done = False

    def _paint(self, text: str, status: str) -> str:
        if not self.color:
            return text
        code = {PASSED: "32", FAILED: "31", NOT_MEASURED: "33"}.get(status, "0")
        return f"\033[{code}m{text}\033[0m"

    def _row(self, cells: list[str]) -> str:
        out = ""
        for (_, w), cell in zip(self.COLUMNS, cells):
            out += cell.ljust(w) + " " if w else cell
        return out.rstrip()

    def threshold_room(self) -> int:
        """Characters of the THRESHOLD column: the rest of the line, at least 60 (a longer text is
        cut there, and shown whole under a check that did not pass)."""
        return max(60, self.width - sum(w + 1 for _, w in self.COLUMNS[:4]))

    def header(self) -> None:
        if not self.header_done:
            print(self._row([c for c, _ in self.COLUMNS]), file=self.stream)
            self.header_done = True

    def add(self, r: CheckResult) -> None:
        self.header()
        number = r.lab.split("-", 1)[0]
        label = LABELS.get(r.status, r.status.upper())
        mw = self.COLUMNS[3][1]
        measured = r.measured if len(r.measured) <= mw else r.measured[:mw - 3] + "..."
        name = r.name if len(r.name) <= 40 else r.name[:37] + "..."
        width = self.COLUMNS[2][1]
        painted = self._paint(label, r.status) + " " * max(0, width - len(label))
        room = self.threshold_room()
        threshold = r.threshold if len(r.threshold) <= room else r.threshold[:room - 3] + "..."
        cells = [number.ljust(self.COLUMNS[0][1]), name.ljust(self.COLUMNS[1][1]), painted,
                 (measured or "-").ljust(self.COLUMNS[3][1]), threshold or "-"]
        print(" ".join(cells).rstrip(), file=self.stream)
        if r.status != PASSED:
            self.details(r)
        self.stream.flush()

    def details(self, r: CheckResult) -> None:
        indent = "      "
        wrap = self.width - len(indent)
        lines: list[str] = []
        for para in (r.message or "").splitlines():
            lines.extend(textwrap.wrap(para, wrap, subsequent_indent="  ") or [""])
        if len(r.measured) > self.COLUMNS[3][1]:
            lines.append(f"measured: {r.measured}")
        if len(r.threshold) > self.threshold_room():
            lines.extend(textwrap.wrap("passes when: " + r.threshold, wrap, subsequent_indent="  "))
        if r.stderr_tail and r.status == FAILED:
            lines.append("last lines of stderr:")
            lines.extend("  " + l for l in r.stderr_tail.splitlines())
        limit = len(lines) if self.verbose else DETAIL_LINES
        if len(lines) > limit:
            lines = lines[:limit] + [f"... ({len(lines) - limit} more lines: run with --verbose)"]
        if r.hint and r.status == FAILED:
            lines.extend(textwrap.wrap("hint: " + r.hint, wrap, subsequent_indent="  "))
        for l in lines:
            print(indent + l, file=self.stream)


NOT_IMPLEMENTED = "not implemented yet"


def not_started(r: CheckResult) -> bool:
    """A check that reached only the skeleton: it failed with "not implemented yet"."""
    return (r.status == FAILED and NOT_IMPLEMENTED in (r.message or "")
            and not (r.message or "").startswith("needs lab "))  # an earlier lab's skeleton, not this lab's


def one_line(text: str, width: int) -> str:
    first = next((l.strip() for l in (text or "").splitlines() if l.strip()), "")
    return first if len(first) <= width else first[:width - 3] + "..."


def lab_status(rows: list[CheckResult], width: int = 80) -> str:
    """What a lab's summary line says after its score: "all passed", "not started",
    "does not compile" or its first failing check with the one-line cause."""
    if rows and all(r.status == PASSED for r in rows):
        return "all passed"
    if rows and all(not_started(r) for r in rows):
        return "not started"
    first = next((r for r in rows if r.status == FAILED), None) or next(r for r in rows if r.status != PASSED)
    lines = first.message.splitlines()
    if lines and "does not compile" in lines[0]:  # cli._build_failure_rows: the compiler's lines follow
        return one_line("does not compile: " + compile_cause(lines[1:]), width)
    label = "not measured" if first.status == NOT_MEASURED else "first failure"
    return one_line(f"{label}: {first.name}: {one_line(first.message, width)}", width)


_LOCATION = re.compile(r"^(\S+?:\d+(?::\d+)?|\S+?\(\d+\))")
_ERROR_TEXT = re.compile(r"\b((?:fatal |catastrophic )?error\b.*)$")


def compile_cause(lines: list[str]) -> str:
    """One line from build.compiler_errors() output: the first location (the learner's
    file:line when it leads) with the first error's text."""
    lines = [l.strip() for l in lines if l.strip()]
    if not lines:
        return ""
    error = next((m.group(1) for l in lines for m in [_ERROR_TEXT.search(l)] if m and _LOCATION.match(l)), "")
    where = _LOCATION.match(lines[0])
    if where and error and not _ERROR_TEXT.search(lines[0]):
        return f"{where.group(1)}: {error}"
    return lines[0]


def lab_line(lab_id: str, rows: list[CheckResult], width: int = 100) -> str:
    """A lab's summary line: "02   transpose   7/10  first failure: ..."."""
    passed = sum(r.status == PASSED for r in rows)
    head = f"{lab_id.split('-', 1)[0]}   {lab_id.split('-', 1)[1]:<22} {passed:>3}/{len(rows):<3}"
    return head + "  " + lab_status(rows, max(30, width - len(head) - 2))


def summary_line(results: list[CheckResult]) -> str:
    passed = sum(r.status == PASSED for r in results)
    failed = sum(r.status == FAILED for r in results)
    unmeasured = sum(r.status == NOT_MEASURED for r in results)
    score = sum(r.weight for r in results if r.status == PASSED)
    total = sum(r.weight for r in results)
    parts = [f"{passed} of {len(results)} checks passed"]
    if failed:
        parts.append(f"{failed} failed")
    if unmeasured:
        parts.append(f"{unmeasured} not measured")
    return ", ".join(parts) + f"; score {score:g} / {total:g}"


def result_output(r: CheckResult) -> str:
    """The text of one check for results.json and JUnit."""
    lines = []
    if r.measured or r.threshold:
        lines.append(f"measured: {r.measured or '-'}; threshold: {r.threshold or '-'}")
    if r.message:
        lines.append(r.message)
    if r.stderr_tail and r.status == FAILED:
        lines.append("last lines of stderr:\n" + r.stderr_tail)
    if r.hint and r.status == FAILED:
        lines.append("hint: " + r.hint)
    return "\n".join(lines)


def gradescope_results(results: list[CheckResult], backend: str, variant: str, elapsed_s: float) -> dict:
    """Gradescope's autograder results format: score, max_score, tests[]."""
    tests = []
    for r in results:
        status = "passed" if r.status == PASSED else "failed"
        output = result_output(r)
        if r.status == NOT_MEASURED:
            output = "NOT MEASURED (scores 0). " + output
        tests.append({
            "name": f"{r.lab} {r.name}",
            "score": r.weight if r.status == PASSED else 0.0,
            "max_score": r.weight,
            "status": status,
            "output": output,
            "visibility": "visible",
        })
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "execution_time": round(elapsed_s, 3),
        "output": f"backend: {backend}; checked: {variant}; " + summary_line(results),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }


def junit_xml(results: list[CheckResult], backend: str) -> ET.ElementTree:
    """JUnit XML: one testsuite per lab, one testcase per check. NOT MEASURED is <skipped>."""
    root = ET.Element("testsuites", name=f"workbook ({backend})")
    by_lab: dict[str, list[CheckResult]] = {}
    for r in results:
        by_lab.setdefault(r.lab, []).append(r)
    total = dict(tests=0, failures=0, skipped=0)
    for lab, rs in by_lab.items():
        suite = ET.SubElement(root, "testsuite", name=lab, tests=str(len(rs)),
                              failures=str(sum(r.status == FAILED for r in rs)),
                              skipped=str(sum(r.status == NOT_MEASURED for r in rs)),
                              errors="0", time=f"{sum(r.duration_s for r in rs):.3f}")
        for r in rs:
            case = ET.SubElement(suite, "testcase", classname=f"{lab}.{r.group}",
                                 name=r.name.split(".", 1)[-1], time=f"{r.duration_s:.3f}")
            text = result_output(r)
            if r.status == FAILED:
                first = (r.message or "failed").splitlines()[0]
                ET.SubElement(case, "failure", message=first).text = text
            elif r.status == NOT_MEASURED:
                ET.SubElement(case, "skipped", message=r.message or "not measured")
            if text:
                ET.SubElement(case, "system-out").text = text
        total["tests"] += len(rs)
        total["failures"] += int(suite.get("failures"))
        total["skipped"] += int(suite.get("skipped"))
    for k, v in total.items():
        root.set(k, str(v))
    ET.indent(root)
    return ET.ElementTree(root)


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def write_junit(path: Path, results: list[CheckResult], backend: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(results, backend).write(path, encoding="utf-8", xml_declaration=True)


def update_last_results(path: Path, results: list[CheckResult], variant: str) -> None:
    """Keeps, per lab and variant (labs/solutions), the outcome of its last check."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        data = {}
    by_lab: dict[str, list[CheckResult]] = {}
    for r in results:
        by_lab.setdefault(r.lab, []).append(r)
    for lab, rs in by_lab.items():
        data.setdefault(lab, {})[variant] = {
            "passed": sum(r.status == PASSED for r in rs),
            "checks": len(rs),
            "score": sum(r.weight for r in rs if r.status == PASSED),
            "max_score": sum(r.weight for r in rs),
            "time": time.strftime("%Y-%m-%d %H:%M"),
        }
    write_json(path, data)
