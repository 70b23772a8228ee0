"""Provided earlier labs: `./workbook provide` and `./workbook check --provided DIR`.

Labs 07, 08 and 12 call earlier labs' functions (lab 08: lab 05's sgemm(), lab 06's
softmax_forward()). To assign such a lab on its own, an instructor builds the earlier labs'
reference as static libraries, which hold no source (`./workbook provide 05 06 --out DIR`, on a
tree with solutions/), and gives DIR to the learners or the grader. `./workbook check 08 --provided
DIR` configures the build with WB_PROVIDED_DIR=DIR, and the learner's binaries link those libraries
in place of labs/05-gemm/gemm.cu and labs/06-softmax-layernorm/softmax_layernorm.cu.

CMake decides what is linked (cmake/WbProvided.cmake): a library whose interface (backend and
flavour, compiler, the headers it was built against) differs from the build's is not, and
<build>/provided-status.json says so; this module turns that file into the lines a learner reads.

DIR/provided.json, the manifest:
  {"format": 1,
   "archives": {"05-gemm/gemm.cu": {"sim-analysis": {"file": "05-gemm/gemm.cu.sim-analysis.a",
                                                     "interface": "<sha256>", "commit": "8a85157",
                                                     "made": "2026-11-28"}, ...}, ...}}
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import labs, prerequisites
from .labs import Lab
from .project import ROOT, build_dir, relative

MANIFEST = "provided.json"
FORMAT = 1


class ProvidedError(Exception):
    """A provided directory that cannot be used, or a provide request that cannot be met."""


def _status(backend: str) -> dict:
    path = build_dir(backend) / "provided-status.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {"offered": [], "used": [], "dir": ""}


def _says(use: str) -> str:
    """"lab 05's gemm.cu" for "05-gemm/gemm.cu"."""
    return f"lab {use[:2]}'s {use.split('/', 1)[1]}"


def read_manifest(directory: Path) -> dict:
    """The manifest of a provided directory; ProvidedError naming what is wrong with it."""
    if not directory.is_dir():
        raise ProvidedError(f"--provided {directory}: no such directory. It is made on a tree with solutions/ by "
                            "./workbook provide LAB... --out DIR (docs/concepts/checking.md, 'Assigning a later "
                            "lab on its own').")
    path = directory / MANIFEST
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProvidedError(f"--provided {directory}: it has no {MANIFEST}, so it was not made by ./workbook "
                            "provide (which writes one beside the libraries).") from None
    except (OSError, json.JSONDecodeError) as e:
        raise ProvidedError(f"--provided {directory}: {MANIFEST} cannot be read ({e}); make it again with "
                            "./workbook provide.") from None
    if data.get("format") != FORMAT or not isinstance(data.get("archives"), dict):
        raise ProvidedError(f"--provided {directory}: {MANIFEST} is not in the format this workbook reads "
                            f"(format {FORMAT}); make it again with this version's ./workbook provide.")
    return data


def linked(lab: Lab, backend: str) -> dict[str, dict]:
    """For @p lab, the entries of the configured build's provided-status.json: use -> entry
    ({"linked": bool, "why": "" | "no-build" | "interface" | "missing-file", "flavour": ...})."""
    return {e["use"]: e for e in _status(backend).get("used", []) if e.get("lab") == lab.id}


def provided_uses(entries: dict[str, dict]) -> set[str]:
    """Of linked()'s @p entries, the earlier-lab files ("05-gemm/gemm.cu") the learner's binary
    links from the provided directory."""
    return {use for use, e in entries.items() if e.get("linked")}


def lines(lab: Lab, entries: dict[str, dict], backend: str, directory: Path) -> list[str]:
    """What a learner reads before @p lab's checks when a provided directory is in use (linked()'s
    @p entries): which earlier labs come from it, and which do not and why."""
    if not entries:
        return []
    shown = relative(directory)
    out: list[str] = []
    used = [_says(u) for u in sorted(u for u, e in entries.items() if e.get("linked"))]
    if used:
        said = used[0] if len(used) == 1 else ", ".join(used[:-1]) + " and " + used[-1]
        out.append(f"lab {lab.number} links {said} from the provided build in "
                   f"{shown}, not from labs/ (a course assigned lab {lab.number} on its own).")
    reasons = {"no-build": "has no {flavour} build of {what}",
               "interface": "has {what} built against other headers or another compiler than this build "
                            "(another version of the workbook, or another machine's toolkit)",
               "missing-file": "lists {what}, but its library file is missing"}
    for use in sorted(u for u, e in entries.items() if not e.get("linked")):
        e = entries[use]
        why = reasons.get(e.get("why"), "cannot provide {what}").format(what=_says(use), flavour=e.get("flavour"))
        out.append(f"{shown} {why}, so lab {lab.number} links your own labs/{use}. Ask for a provided build made "
                   f"from this version and backend (./workbook provide {use[:2]} --backend {backend}).")
    return out


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=7"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


@dataclass
class Offer:
    use: str
    flavour: str
    target: str
    interface: str
    archive: Path


def offers(backend: str, numbers: list[str]) -> list[Offer]:
    """The libraries this build can make of the earlier labs numbered @p numbers (what later labs
    link of them, in each flavour they need)."""
    found = [Offer(e["use"], e["flavour"], e["target"], e["interface"], Path(e["archive"]))
             for e in _status(backend).get("offered", [])]
    return [o for o in found if o.use[:2] in numbers]


def users() -> dict[str, list[str]]:
    """Earlier lab number -> the later labs (numbers) that link its files (their USES)."""
    out: dict[str, list[str]] = {}
    for lab in labs.all_labs():
        for use in prerequisites.uses(lab):
            out.setdefault(use[:2], [])
            if lab.number not in out[use[:2]]:
                out[use[:2]].append(lab.number)
    return out


def write(directory: Path, built: list[Offer]) -> None:
    """Copies the built libraries into @p directory and merges them into its manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"format": FORMAT, "archives": {}}
    if (directory / MANIFEST).is_file():
        try:
            manifest = read_manifest(directory)
        except ProvidedError:
            manifest = {"format": FORMAT, "archives": {}}
    commit, made = _commit(), datetime.date.today().isoformat()
    for o in built:
        rel = f"{o.use}.{o.flavour}.a"
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(o.archive, directory / rel)
        manifest["archives"].setdefault(o.use, {})[o.flavour] = {
            "file": rel, "interface": o.interface, "commit": commit, "made": made}
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    tmp.replace(directory / MANIFEST)
