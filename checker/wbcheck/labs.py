"""Lab metadata: checker/labs/NN-name/lab.json, and the stage map of the workbook.

lab.json fields (all optional except title and stage):
  title       "SAXPY and vector basics"
  stage       1..4, a key of STAGES
  sources     the student's files in labs/NN-name/ (and solutions/NN-name/)
  timeout_s   time limit per check, in seconds (default 60)
  requires    system features the lab needs beyond the basics, e.g. ["mpi"]
  launch      how a check process is started: {"kind": "direct"} (default) runs the check
              binary itself; other kinds are registered with the runner and read their own
              fields from this object (kind "mpi": ranks, tcp, stall_s; see collectives.py)
  weights     default weight per group: {"Correctness": 1, "Analysis": 1, "Performance": 1}

The checks themselves (name, weight, backends, time limit, rank counts, limits, what passes,
hint) are declared beside their tests with WB_CHECK in checker/labs/NN-name/*.cpp
(checker/support/wb_check_spec.h), and read from there (declarations.py); lab.json holds what
belongs to the lab only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import declarations
from .project import ROOT

CHECKER_LABS = ROOT / "checker" / "labs"
GROUPS = ("Correctness", "Analysis", "Performance")
DEFAULT_TIMEOUT_S = 60.0

# The workbook's stages, by number. Each lab names its stage in its lab.json ("stage"), the one
# place a lab's stage is written; `./workbook list` groups the labs by it, in lab order.
STAGES = {1: "CUDA kernels", 2: "Primitives", 3: "Collectives", 4: "Systems"}


class LabError(Exception):
    """A lab that cannot be found or whose metadata is invalid."""


@dataclass
class CheckSpec:
    name: str
    weight: float = 1.0
    hint: str = ""
    passes: str = ""             # what passes, limits written in (the THRESHOLD column)
    backends: tuple[str, ...] = ()
    timeout_s: float | None = None
    launch: dict = field(default_factory=dict)   # overrides of the lab's "launch" fields

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass
class Lab:
    id: str                      # "01-saxpy"
    number: str                  # "01"
    name: str                    # "saxpy"
    title: str
    stage: int
    directory: Path              # checker/labs/01-saxpy
    sources: list[str] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S
    requires: list[str] = field(default_factory=list)
    launch: dict = field(default_factory=lambda: {"kind": "direct"})
    weights: dict = field(default_factory=dict)
    checks: list[CheckSpec] = field(default_factory=list)
    raw: dict = field(default_factory=dict)

    def target(self, solutions: bool) -> str:
        """CMake target of the check binary (see wb_add_lab in cmake/Workbook.cmake)."""
        ident = "check_" + self.id.replace("-", "_")
        return ident + "_solution" if solutions else ident

    def source_dir(self, solutions: bool) -> Path:
        return ROOT / ("solutions" if solutions else "labs") / self.id

    def checks_for(self, backend: str) -> list[CheckSpec]:
        return [c for c in self.checks if not c.backends or backend in c.backends]

    def spec(self, check_name: str) -> CheckSpec:
        """The metadata of a check; an unlisted check gets its group's default weight."""
        for c in self.checks:
            if c.name == check_name:
                return c
        group = check_name.split(".", 1)[0]
        return CheckSpec(name=check_name, weight=float(self.weights.get(group, 1.0)))

    def launch_for(self, check_name: str) -> dict:
        """The lab's "launch" object with the check's own "launch" fields applied."""
        return {**self.launch, **self.spec(check_name).launch}

    def timeout_for(self, check_name: str) -> float:
        spec = self.spec(check_name)
        return spec.timeout_s if spec.timeout_s else self.timeout_s


def load_lab(directory: Path) -> Lab:
    path = directory / "lab.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise LabError(f"{path}: cannot read lab metadata: {e}") from e
    match = re.fullmatch(r"(\d+)-(.+)", directory.name)
    if not match:
        raise LabError(f"{directory}: a lab directory is named NN-name (e.g. 01-saxpy)")
    for key in ("title", "stage"):
        if key not in data:
            raise LabError(f"{path}: missing field '{key}'")
    if data["stage"] not in STAGES:
        raise LabError(f"{path}: \"stage\" is {data['stage']!r}; the workbook's stages are "
                       + ", ".join(f"{n} ({t})" for n, t in STAGES.items()))
    if "checks" in data:
        raise LabError(f"{path}: \"checks\" is no longer read from lab.json: declare each check beside its test "
                       f"with WB_CHECK(Group, Name, .weight = ..., .hint = \"...\") (checker/support/wb_check_spec.h)")
    try:
        declared = declarations.read_declarations(directory)
    except (OSError, declarations.DeclarationError) as e:
        raise LabError(str(e)) from e
    weights = data.get("weights", {})
    checks = [CheckSpec(
        name=d.name,
        weight=d.weight if d.weight is not None else float(weights.get(d.name.split(".")[0], 1.0)),
        hint=d.hint,
        passes=d.passes_text(),
        backends=d.backends,
        timeout_s=d.timeout_s,
        launch={"ranks": list(d.ranks)} if d.ranks else {}) for d in declared]
    return Lab(
        id=directory.name, number=match.group(1), name=match.group(2),
        title=data["title"], stage=int(data["stage"]), directory=directory,
        sources=list(data.get("sources", [])),
        timeout_s=float(data.get("timeout_s", DEFAULT_TIMEOUT_S)),
        requires=list(data.get("requires", [])),
        launch=dict(data.get("launch", {"kind": "direct"})),
        weights=dict(data.get("weights", {})),
        checks=checks, raw=data)


def all_labs() -> list[Lab]:
    """Every lab with checks and a student directory, in number order."""
    labs = []
    if CHECKER_LABS.is_dir():
        for d in sorted(CHECKER_LABS.iterdir()):
            if (d / "lab.json").is_file() and (ROOT / "labs" / d.name).is_dir():
                labs.append(load_lab(d))
    return labs


def select_labs(selectors: list[str]) -> list[Lab]:
    """Labs named by number ("01", "1"), name ("saxpy") or id ("01-saxpy"); all if none."""
    labs = all_labs()
    if not selectors:
        return labs
    chosen: list[Lab] = []
    for sel in selectors:
        s = sel.strip().rstrip("/").split("/")[-1].lower()
        found = [lab for lab in labs
                 if s in (lab.id, lab.name, lab.number) or (s.isdigit() and int(s) == int(lab.number))]
        if not found:
            known = ", ".join(f"{lab.number} ({lab.name})" for lab in labs) or "none"
            raise LabError(f"no lab matches '{sel}'; available labs: {known}")
        for lab in found:
            if lab not in chosen:
                chosen.append(lab)
    return chosen
