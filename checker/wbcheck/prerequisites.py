"""Earlier labs a lab's code runs: which of their functions are still the skeleton's.

Labs 07, 08 and 12 link the learner's own earlier labs (the USES of checker/labs/NN-name/
CMakeLists.txt: lab 08 calls lab 05's sgemm() and lab 06's softmax_forward()). While such a
function is the skeleton's, every check that runs it fails with "not implemented yet", and the
name in that message is the later lab's function that passed the error on. Before a lab's checks
run, `./workbook check` reads the sources (no build) and says in one line per function which
earlier lab to finish; a failure that the skeleton of an earlier lab explains says so in its
first line.

A function is the skeleton's while its body still holds the skeleton's marker: `return
cudaErrorNotYetImplemented;` (CUDA labs) or `COMM_NOT_IMPLEMENTED(` (collective labs).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from .labs import Lab
from .project import ROOT

FAILED = "failed"  # runner.FAILED (runner imports this module's users, not this module)

_MARKERS = ("return cudaErrorNotYetImplemented;", "COMM_NOT_IMPLEMENTED(")
# A definition's head at the start of a line: a return type, then the name and its parameters.
_DEFINITION = re.compile(r"^(?:template\s*<[^;{]*>\s*)?[A-Za-z_][\w:<>,\s\*&]*?\b(?P<name>[A-Za-z_]\w*)\s*\(",
                         re.M)
_USES = re.compile(r"\bUSES\b((?:\s+\d\d-[\w-]+/[\w.]+)+)")


@dataclass
class Unfinished:
    lab: str        # "05"
    function: str   # "sgemm"
    path: str       # "labs/05-gemm/gemm.cu"

    def line(self, caller: str) -> str:
        return (f"lab {caller} calls lab {self.lab}'s {self.function}() ({self.path}), which is not implemented "
                f"yet: the checks that run it fail until it is. Finish lab {self.lab} first "
                f"(./workbook check {self.lab}), or, where a course assigned lab {caller} on its own, use the "
                f"provided build of lab {self.lab} it gave you: ./workbook check {caller} --provided DIR.")


def uses(lab: Lab, root: Path = ROOT) -> list[str]:
    """The earlier labs' files @p lab links ("05-gemm/gemm.cu"), from its checker CMakeLists.txt."""
    cmake = root / "checker" / "labs" / lab.id / "CMakeLists.txt"
    if not cmake.is_file():
        return []
    text = re.sub(r"#[^\n]*", "", cmake.read_text(errors="replace"))
    return [f for m in _USES.finditer(text) for f in m.group(1).split()]


def skeleton_functions(text: str) -> list[str]:
    """The functions of a source whose body still holds a skeleton marker, in file order."""
    heads = [(m.start(), m.group("name")) for m in _DEFINITION.finditer(text)
             if m.group("name") not in ("if", "for", "while", "switch", "return", "sizeof")]
    found: list[str] = []
    for marker in _MARKERS:
        for m in re.finditer(re.escape(marker), text):
            name = next((n for start, n in reversed(heads) if start < m.start()), None)
            if name and name not in found:
                found.append(name)
    return found


def calls(text: str, function: str) -> bool:
    return re.search(rf"\b{re.escape(function)}\s*\(", text) is not None


def own_sources(lab: Lab, tree: str = "labs", root: Path = ROOT) -> str:
    """The text of @p lab's own sources in @p tree, read once per run (explain() asks per failed row)."""
    return _read_sources(root / tree / lab.id, tuple(lab.sources))


@functools.lru_cache(maxsize=None)
def _read_sources(directory: Path, sources: tuple[str, ...]) -> str:
    return "\n".join((directory / s).read_text(errors="replace") for s in sources if (directory / s).is_file())


def unfinished(lab: Lab, tree: str = "labs", root: Path = ROOT, skip: set[str] | frozenset = frozenset()
               ) -> list[Unfinished]:
    """The skeleton functions of the earlier labs that @p lab's sources (in @p tree: "labs" for the
    learner's, "solutions") call; the files of @p skip ("05-gemm/gemm.cu") are not looked at
    (they come from a provided build, provided.py)."""
    own = own_sources(lab, tree, root)
    out: list[Unfinished] = []
    for use in uses(lab, root):
        path = root / tree / use
        if use in skip or not path.is_file():
            continue
        for function in skeleton_functions(path.read_text(errors="replace")):
            if calls(own, function):
                out.append(Unfinished(use[:2], function, f"{tree}/{use}"))
    return out


_OWN = re.compile(r"not implemented yet: (?P<fn>\w+)")


def explain(lab: Lab, row, missing: list[Unfinished], tree: str = "labs", root: Path = ROOT) -> None:
    """Rewrites a failed @p row (a runner.CheckResult) of @p lab that says "not implemented yet" for
    one of the lab's own functions whose body is no longer the skeleton's: the error came from an
    earlier lab's unfinished function of @p missing, which its first line then names."""
    if not missing or row.status != FAILED or (row.message or "").startswith("needs lab "):
        return
    m = _OWN.search(row.message or "")
    if not m:
        return
    own = own_sources(lab, tree, root)
    defined = {d.group("name") for d in _DEFINITION.finditer(own)}
    if m.group("fn") in skeleton_functions(own) or m.group("fn") not in defined:
        return  # the lab's own function is unfinished, or not the lab's
    names = ", ".join(f"lab {u.lab}'s {u.function}() ({u.path})" for u in missing)
    row.message = (f"needs lab {missing[0].lab} first: {m.group('fn')}() is written, but it calls {names}, not "
                   f"implemented yet, which returned the error it passed on.\n{row.message}")
    row.hint = f"Finish lab {missing[0].lab} (./workbook check {missing[0].lab}), then run this lab again."
