#!/usr/bin/env python3
"""Unit tests of the workbook CLI's pieces that need no build: lab metadata and
selection, dependency reporting, the exit status of a bad command line, compiler errors
(real g++ and nvcc outputs stored in fixtures/compiler), the per-lab summary and the overview
of untouched labs, progress without control characters, rank counts grouped per check."""

import io
import re
import subprocess
import sys
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import build, cli, collectives, deps, labs, prerequisites, progress, report, runner, sandbox  # noqa: E402

import mpi_launch  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "compiler"


class LabMetadata(unittest.TestCase):
    def test_every_lab_json_loads_and_names_valid_groups(self):
        found = labs.all_labs()
        self.assertTrue(found, "no labs found")
        for lab in found:
            self.assertIn(lab.stage, (1, 2, 3, 4), lab.id)
            self.assertTrue(lab.checks, f"{lab.id}: declares no checks (WB_CHECK)")
            for check in lab.checks:
                self.assertIn(check.group, labs.GROUPS, f"{lab.id}: {check.name}")
                self.assertGreater(check.weight, 0, f"{lab.id}: {check.name}")
            for source in lab.sources:
                self.assertTrue((ROOT / "labs" / lab.id / source).is_file(), f"{lab.id}: {source}")

    def test_a_stage_outside_the_stage_map_is_refused_naming_the_stages(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            lab_dir = Path(tmp) / "42-example"
            lab_dir.mkdir()
            (lab_dir / "lab.json").write_text(json.dumps({"title": "Example", "stage": 7}))
            with self.assertRaises(labs.LabError) as caught:
                labs.load_lab(lab_dir)
        self.assertIn('"stage" is 7', str(caught.exception))
        self.assertIn("1 (CUDA kernels)", str(caught.exception))

    def test_selection_by_number_name_and_id(self):
        for selector in ("01", "1", "saxpy", "01-saxpy", "labs/01-saxpy/"):
            self.assertEqual([lab.id for lab in labs.select_labs([selector])], ["01-saxpy"], selector)

    def test_unknown_lab_lists_the_available_ones(self):
        with self.assertRaises(labs.LabError) as ctx:
            labs.select_labs(["nosuchlab"])
        self.assertIn("01 (saxpy)", str(ctx.exception))

    def test_target_names(self):
        lab = labs.select_labs(["01"])[0]
        self.assertEqual(lab.target(False), "check_01_saxpy")
        self.assertEqual(lab.target(True), "check_01_saxpy_solution")


class Dependencies(unittest.TestCase):
    def test_missing_dependency_names_exact_packages_without_installing(self):
        fake = deps.Dependency("fake", "a fake tool", lambda: False, ("fake-pkg-dev", "fake-bin"))
        with mock.patch.dict(deps.DEPENDENCIES, {"fake": fake}), \
                mock.patch("subprocess.run", side_effect=AssertionError("must not run apt-get")):
            with self.assertRaises(deps.DependencyError) as ctx:
                deps.ensure(["fake"], allow_install=False)
        text = str(ctx.exception)
        self.assertIn("a fake tool", text)
        self.assertIn("apt-get install -y fake-bin fake-pkg-dev", text)
        self.assertIn("--no-install", text)

    def test_nvcc_is_never_installed_automatically(self):
        fake = deps.Dependency("nvcc", "nvcc", lambda: False, ("nvidia-cuda-toolkit",), auto_install=False,
                               note="Install NVIDIA's CUDA Toolkit")
        with mock.patch.dict(deps.DEPENDENCIES, {"nvcc": fake}), \
                mock.patch("subprocess.run", side_effect=AssertionError("must not run apt-get")):
            with self.assertRaises(deps.DependencyError) as ctx:
                deps.ensure(["nvcc"], allow_install=True)
        self.assertIn("Install NVIDIA's CUDA Toolkit", str(ctx.exception))

    def test_requirements_per_backend(self):
        self.assertIn("boost_context", deps.required("check", "sim"))
        self.assertIn("nvcc", deps.required("check", "cuda"))
        self.assertNotIn("nvcc", deps.required("check", "sim"))
        self.assertIn("mpi", deps.required("check", "sim", needs_mpi=True))
        self.assertEqual(deps.required("docs", None), ["doxygen"])
        self.assertIn("matplotlib", deps.required("bench", "sim", plot=True))  # the benchmarks' plots
        self.assertNotIn("matplotlib", deps.required("bench", "sim"))  # running them needs no matplotlib
        self.assertNotIn("matplotlib", deps.required("check", "sim"))


class CommandLine(unittest.TestCase):
    def run_workbook(self, *args):
        return subprocess.run([sys.executable, str(ROOT / "workbook"), *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)

    def test_unknown_lab_is_a_usage_error(self):
        out = self.run_workbook("check", "nosuchlab", "--backend", "sim", "--no-install")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("no lab matches 'nosuchlab'", out.stderr)

    def test_list_shows_stages(self):
        out = self.run_workbook("list")
        self.assertEqual(out.returncode, 0, out.stderr)
        for text in ("Stage 1: CUDA kernels", "01-saxpy", "Stage 3: Collectives", "Stage 4: Systems",
                     "12-data-parallel-trainer"):
            self.assertIn(text, out.stdout)


def fixture(name: str) -> str:
    """A compiler output stored with @ROOT@ for the repository it was produced in."""
    return (FIXTURES / name).read_text().replace("@ROOT@", str(ROOT))


class Declarations(unittest.TestCase):
    """WB_CHECK declarations read from a check's source (checker/wbcheck/declarations.py)."""

    def read(self, text):
        import tempfile
        from wbcheck import declarations
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "check_x.cpp").write_text(text)
            return declarations.read_declarations(Path(tmp))

    def test_fields_literals_and_comments(self):
        found = self.read('''
// WB_CHECK(Correctness, InAComment, .weight = 9)
WB_CHECK(Correctness, First, .weight = 2, .backends = "sim", .timeout_s = 120.5, .ranks = {2, 4},
         .hint = "Round up: (n + 255) / 256, "  // a comment between literals
                 "then \\"check\\" n % 256.") {
  EXPECT_TRUE(true);
}
WB_CHECK(Performance, Second) { }
''')
        self.assertEqual([d.name for d in found], ["Correctness.First", "Performance.Second"])
        first = found[0]
        self.assertEqual((first.weight, first.backends, first.timeout_s, first.ranks, first.line),
                         (2.0, ("sim",), 120.5, [2, 4], 3))
        self.assertEqual(first.hint, 'Round up: (n + 255) / 256, then "check" n % 256.')
        self.assertIsNone(found[1].weight)

    def test_a_macro_family_is_expanded_where_it_is_used(self):
        found = self.read('''
#define SWEEP(NAME, TYPE)                                   \\
  WB_CHECK(Correctness, NAME, .weight = 1, .hint = "h") {   \\
    sweep(TYPE);                                            \\
  }
SWEEP(FloatSum, f32)
SWEEP(DoubleSum, f64)
''')
        self.assertEqual([(d.name, d.line, d.hint) for d in found],
                         [("Correctness.FloatSum", 6, "h"), ("Correctness.DoubleSum", 7, "h")])

    def test_what_the_runner_cannot_read_is_named(self):
        from wbcheck import declarations
        cases = {
            "WB_CHECK(Correctness, A, .wieght = 2) {}": "'.wieght = 2' is not a field",
            "WB_CHECK(Correctness, A, .weight = kWeight) {}": "write a number literal",
            "WB_CHECK(Correctness, A, .hint = kHint) {}": "write a string literal",
            'WB_CHECK(Correctness, A, .backends = "gpu") {}': 'names "sim" or "cuda"',
            'WB_CHECK(Correctness, A, .hint = "h", .weight = 1) {}': "in the order weight, backends",
            "WB_CHECK(Correctness, A) {}\nWB_CHECK(Correctness, A) {}": "declared twice",
            # a limit and its text must agree
            'WB_CHECK(Correctness, A, .limits = {{"x", 1}}, .passes = "{y}") {}': ".passes names {y}, not among",
            'WB_CHECK(Correctness, A, .limits = {{"x", 1}}, .passes = "none") {}': "limit x does not appear",
            'WB_CHECK(Correctness, A, .limits = {{"x", kX}}, .passes = "{x}") {}': "number literals",
            'WB_CHECK(Correctness, A, .limits = {{"x", 1}, {"x", 2}}, .passes = "{x}") {}': "names x twice",
            'WB_CHECK(Correctness, A, .limits = {{"x", 1}}, .passes = "{x:.q}") {}': "a format such as",
            'WB_CHECK(Correctness, A, .passes = "p", .limits = {{"x", 1}}) {}': "in the order",
        }
        for text, message in cases.items():
            with self.subTest(text=text):
                with self.assertRaises(declarations.DeclarationError) as caught:
                    self.read(text)
                self.assertIn(message, str(caught.exception))
                self.assertIn("check_x.cpp:", str(caught.exception))

    def test_limits_are_written_into_what_passes(self):
        found = self.read('''
WB_CHECK(Performance, Pool, .weight = 2, .backends = "sim", .limits = {{"max_loads", 9.0}, {"min_ratio", 0.80},
                                                                      {"factor", 1.05}, {"tol", 1e-9}},
         .passes = "loads <= {max_loads} ({max_loads:.2f}), >= {min_ratio:.0%} of copy, {factor} x, {tol}; "
                   "model {1, 4, 1}",
         .hint = "h") {}
''')
        d = found[0]
        self.assertEqual(d.limits, {"max_loads": 9.0, "min_ratio": 0.8, "factor": 1.05, "tol": 1e-9})
        self.assertEqual(d.passes_text(), "loads <= 9 (9.00), >= 80% of copy, 1.05 x, 1e-9; model {1, 4, 1}")

    def test_checks_that_pass_on_one_text_name_one_constant(self):
        found = self.read('''
namespace {
// shared
constexpr char kVersionPasses[] = "26 cases, "  // a comment between literals
                                  "exact";
}  // namespace
WB_CHECK(Correctness, Naive, .passes = kVersionPasses, .hint = "h1") {}
WB_CHECK(Correctness, Tiled, .weight = 2, .passes = kVersionPasses) {}
''')
        self.assertEqual([(d.name, d.passes) for d in found],
                         [("Correctness.Naive", "26 cases, exact"), ("Correctness.Tiled", "26 cases, exact")])
        from wbcheck import declarations
        with self.assertRaises(declarations.DeclarationError) as caught:
            self.read("WB_CHECK(Correctness, A, .passes = kElsewhere) {}")
        self.assertIn("or name a constexpr char kElsewhere[]", str(caught.exception))

    def test_the_compiler_enforces_what_the_runner_reads(self):
        """wb_check_spec.h's static_assert and WB_LIMIT refuse what declarations.py refuses."""
        import shutil
        import tempfile
        compiler = shutil.which("g++") or shutil.which("c++")
        gtest = Path("/usr/include/gtest/gtest.h")
        if not compiler or not gtest.is_file():
            self.skipTest("needs g++ and GoogleTest's headers")
        body = {
            "good": 'WB_CHECK(Performance, A, .limits = {{"m", 4.0}}, .passes = "<= {m:.2f}") {\n'
                    '  static_assert(WB_LIMIT("m") == 4.0);\n}\n',
            "unknown placeholder": 'WB_CHECK(Performance, A, .limits = {{"m", 4.0}}, .passes = "<= {n}") {}\n',
            "unused limit": 'WB_CHECK(Performance, A, .limits = {{"m", 4.0}}, .passes = "<= 4") {}\n',
            "unknown limit": 'WB_CHECK(Performance, A, .limits = {{"m", 4.0}}, .passes = "{m}") {\n'
                             '  double v = WB_LIMIT("n"); (void)v;\n}\n',
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in body.items():
                with self.subTest(name=name):
                    src = Path(tmp) / "check.cpp"
                    src.write_text('#include "wb_check_spec.h"\n' + text)
                    proc = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-I",
                                           str(ROOT / "checker" / "support"), str(src)],
                                          capture_output=True, text=True)
                    self.assertEqual(proc.returncode == 0, name == "good", proc.stderr[-2000:])

    def test_lab_json_checks_are_refused_with_the_way_to_declare_them(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            lab_dir = Path(tmp) / "42-example"
            lab_dir.mkdir()
            (lab_dir / "lab.json").write_text(json.dumps({"title": "Example", "stage": 1, "checks": []}))
            with self.assertRaises(labs.LabError) as caught:
                labs.load_lab(lab_dir)
        self.assertIn("WB_CHECK(Group, Name", str(caught.exception))


class Handouts(unittest.TestCase):
    """The handouts' tables generated from the declarations (checker/wbcheck/handouts.py)."""

    MARK = ("<!-- generated by ./workbook handouts from the WB_CHECK declarations in check_x.cpp: "
            "edit those -->\n")

    def tree(self, tmp, source, readme):
        lab = Path(tmp) / "checker" / "labs" / "42-example"
        lab.mkdir(parents=True)
        (lab / "check_x.cpp").write_text(source)
        (Path(tmp) / "labs" / "42-example").mkdir(parents=True)
        path = Path(tmp) / "labs" / "42-example" / "README.md"
        path.write_text(readme)
        return path

    SOURCE = '''
WB_CHECK(Correctness, Small, .passes = "n = 1, 31; `|y - ref| <= 2u`") {}
WB_CHECK(Analysis, MemcheckClean, .backends = "sim", .passes = "0 reports") {}
WB_CHECK(Analysis, RacecheckClean, .backends = "sim", .passes = "0 reports") {}
WB_CHECK(Performance, Bandwidth, .backends = "cuda", .limits = {{"min_ratio", 0.8}},
         .passes = ">= {min_ratio} x copy") {}
'''

    def test_rows_in_declaration_order_merged_and_escaped(self):
        import tempfile
        from wbcheck import handouts
        with tempfile.TemporaryDirectory() as tmp:
            readme = self.tree(tmp, self.SOURCE, "# Lab\n\n" + self.MARK + "stale\n" + handouts.END + "\n\nmore\n")
            self.assertEqual(len(handouts.sync(write=True, root=Path(tmp))), 1)
            self.assertEqual(readme.read_text(), "# Lab\n\n" + self.MARK + (
                "| Check | What passes |\n|---|---|\n"
                "| Correctness.Small | n = 1, 31; `\\|y - ref\\| <= 2u` |\n"
                "| Analysis.MemcheckClean, .RacecheckClean (sim) | 0 reports |\n"
                "| Performance.Bandwidth (GPU) | >= 0.8 x copy |\n") + handouts.END + "\n\nmore\n")
            self.assertEqual(handouts.sync(write=False, root=Path(tmp)), [])  # in sync now

    def test_a_changed_limit_is_drift_until_the_tables_are_rewritten(self):
        import tempfile
        from wbcheck import handouts
        with tempfile.TemporaryDirectory() as tmp:
            readme = self.tree(tmp, self.SOURCE, self.MARK + handouts.END + "\n")
            handouts.sync(write=True, root=Path(tmp))
            source = Path(tmp) / "checker" / "labs" / "42-example" / "check_x.cpp"
            source.write_text(self.SOURCE.replace("0.8}", "0.85}"))
            diffs = handouts.sync(write=False, root=Path(tmp))
            self.assertEqual(len(diffs), 1)
            self.assertIn("-| Performance.Bandwidth (GPU) | >= 0.8 x copy |", diffs[0])
            self.assertIn("+| Performance.Bandwidth (GPU) | >= 0.85 x copy |", diffs[0])
            self.assertIn("0.8 x copy", readme.read_text())  # --check writes nothing

    def test_a_listed_check_without_its_text_is_named(self):
        import tempfile
        from wbcheck import handouts
        with tempfile.TemporaryDirectory() as tmp:
            self.tree(tmp, "WB_CHECK(Correctness, Bare, .weight = 1) {}\n", self.MARK + handouts.END + "\n")
            with self.assertRaises(handouts.HandoutError) as caught:
                handouts.sync(write=False, root=Path(tmp))
            self.assertIn("check_x.cpp:1: Correctness.Bare has no .passes text", str(caught.exception))

    def test_the_threshold_shown_is_the_declarations_whatever_the_process_recorded(self):
        import json
        import tempfile
        lab = labs.select_labs(["01"])[0]
        check = "Performance.CoalescedAccess"
        report = {"testsuites": [{"name": "Performance", "testsuite": [{
            "name": "CoalescedAccess", "measured": "1.00", "threshold": "<= 1000 sectors (forged)"}]}]}
        outcome = runner.ProcessOutcome(returncode=0, timed_out=False, stdout="", stderr="", duration_s=0.1,
                                        report=json.dumps(report).encode())
        with tempfile.TemporaryDirectory() as tmp:
            result = runner.interpret(lab, check, outcome, Path(tmp) / "none.json", 60.0)
        self.assertEqual(result.threshold, lab.spec(check).passes)
        self.assertIn("at most 4 global-memory sectors per warp-level request", result.threshold)

    def test_the_project_handouts_match_their_declarations(self):
        from wbcheck import handouts
        self.assertGreaterEqual(len(handouts.handouts()), 7)
        diffs = handouts.sync(write=False)
        self.assertEqual(diffs, [], "run ./workbook handouts:\n" + "".join(diffs))


class CheckOrder(unittest.TestCase):
    def test_groups_in_their_order_whatever_the_link_order(self):
        # A lab whose check files register a Performance check before an Analysis one (lab 04's
        # check_scan.cpp is linked before check_histogram.cpp): GoogleTest lists the suites in
        # registration order; the runner's rows stay Correctness, Analysis, Performance.
        import tempfile
        listing = ("Running main() from gtest_main.cc\nCorrectness.\n  A\n  B\nPerformance.\n  P1\n"
                   "Analysis.\n  M\n  DISABLED_R\nPerformance.\n  P2\nCorrectness.\n  C\n")
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "fake_checks"
            binary.write_text("#!/bin/sh\nprintf '%s' '" + listing.replace("'", "") + "'\n")
            binary.chmod(0o755)
            self.assertEqual(runner.list_checks(binary),
                             ["Correctness.A", "Correctness.B", "Correctness.C", "Analysis.M", "Performance.P1",
                              "Performance.P2"])


class SandboxHiddenPaths(unittest.TestCase):
    """What the runner asks the sandbox to hide from the lab's code (checker/wbcheck/sandbox.py)."""

    def test_report_folders_are_hidden_unless_private_already_or_holding_the_workbook(self):
        build_dir = ROOT / "build" / "sim"
        hidden = sandbox.hidden_paths(ROOT, build_dir, [
            "/tmp/results.json",            # the sandbox's private /tmp covers it; hiding /tmp breaks MPI
            "/dev/shm/junit.xml",
            str(ROOT.parent / "results.json"),  # the folder holding the workbook itself
            "/srv/grading/out/results.json",    # hidden
            None])
        resolved = ROOT.resolve()
        self.assertEqual(hidden, [resolved / "solutions", resolved / ".git", (ROOT / "build").resolve(),
                                  Path("/srv/grading/out")])


class StatusRecord(unittest.TestCase):
    """The launcher reads the ranks' status record as common/comm's headers declare it."""

    def test_layout_and_codes_come_from_the_headers(self):
        import struct
        layout = mpi_launch._status_layout()
        self.assertEqual(layout["ops"]["send"], mpi_launch._OP["send"])
        self.assertEqual(mpi_launch._TEST[0], layout["sizes"]["test_offset"])
        self.assertEqual(layout["collectives"][0], "allreduce")
        activity = struct.pack("<iiiiQ", mpi_launch._OP["send"], 1, 0, 1, 4096)
        self.assertEqual(mpi_launch._activity(activity), "blocked in send(to=1, tag=0, bytes=4096)")
        library = struct.pack("<iiiiQ", mpi_launch._OP["library"], 2,
                              [k for k, v in layout["collectives"].items() if v == "broadcast"][0], 1, 8)
        self.assertEqual(mpi_launch._activity(library), "blocked in library_broadcast(root=2, bytes=8)")
        text = struct.pack("<iiiiQ", mpi_launch._OP["text"], 0, 0, 1, 0) + b"waiting for the GPU\0"
        self.assertEqual(mpi_launch._activity(text), "waiting for the GPU")

    def test_a_header_without_the_codes_is_named(self):
        with mock.patch.object(mpi_launch, "_COMM_INCLUDE", "/nonexistent"):
            with self.assertRaises(OSError):
                mpi_launch._status_layout()
        with self.assertRaises(RuntimeError) as caught:
            mpi_launch._enum("namespace comm {}", "Op", "status.h")
        self.assertIn("status.h: enum class Op not found", str(caught.exception))


class CompilerErrors(unittest.TestCase):
    """The learner's file:line and the error: line lead, on both compilers."""

    def lines(self, name):
        text = build.compiler_errors(fixture(name))
        self.assertNotIn(str(ROOT), text, "paths are shown relative to the repository")
        return text.splitlines()

    def test_error_in_the_learners_file_comes_first_with_its_source_line(self):
        for name, first in (("gcc-undeclared.txt", "labs/01-saxpy/saxpy.cu:12:34: error: ‘idx’ was not declared"),
                            ("nvcc-undeclared.txt", 'labs/01-saxpy/saxpy.cu(12): error: identifier "idx" is undefined')):
            lines = self.lines(name)
            self.assertTrue(lines[0].startswith(first), f"{name}: {lines[:3]}")
            self.assertIn("y[idx]", lines[1], f"{name}: the source line follows the error")

    def test_template_error_shows_the_instantiation_point_then_the_error(self):
        for name, where in (("gcc-template.txt", "labs/01-saxpy/saxpy.cu:12:48:   required from here"),
                            ("nvcc-template.txt", "labs/01-saxpy/saxpy.cu(12): the error below is in a template "
                                                  "instantiated from here")):
            lines = self.lines(name)
            self.assertEqual(lines[0], where, name)
            first_error = next(i for i, l in enumerate(lines) if re.search(r"\b(error)\b", l) and l is not lines[0])
            self.assertLessEqual(first_error, 2, f"{name}: the error: line follows the learner's line: {lines[:4]}")
            self.assertRegex(lines[first_error], r"^/usr/include/c\+\+/.*(: |\)\: )error", name)

    def test_long_output_is_folded_with_a_count(self):
        lines = self.lines("gcc-template.txt")
        self.assertLessEqual(len(lines), 26)
        self.assertRegex(lines[-1], r"^\.\.\. \(\d+ more lines of compiler output: run with --verbose\)$")
        self.assertFalse(any(l.startswith(("FAILED:", "ninja:", "/usr/bin/c++")) for l in lines),
                         "build-tool lines and the compiler command are left out")


def row(lab="01-saxpy", name="Correctness.A", status=runner.FAILED, message="", **kw):
    return runner.CheckResult(lab=lab, name=name, status=status, message=message, **kw)


NOT_IMPL = "not implemented yet: saxpy in labs/01-saxpy/saxpy.cu (saxpy(n=1) returned cudaErrorNotYetImplemented)"


class Summary(unittest.TestCase):
    def test_lab_status(self):
        self.assertEqual(report.lab_status([row(status=runner.PASSED)] * 3), "all passed")
        self.assertEqual(report.lab_status([row(message=NOT_IMPL)] * 3), "not started")
        mixed = [row(status=runner.PASSED), row(name="Correctness.B", message="7 of 96 elements differ\nmore"),
                 row(message=NOT_IMPL)]
        self.assertEqual(report.lab_status(mixed), "first failure: Correctness.B: 7 of 96 elements differ")
        broken = [row(message="labs/01-saxpy does not compile, so no check of this lab can run:\n"
                              "labs/01-saxpy/saxpy.cu:12:34: error: ‘idx’ was not declared in this scope")]
        self.assertEqual(report.lab_status(broken, width=120),
                         "does not compile: labs/01-saxpy/saxpy.cu:12:34: error: ‘idx’ was not declared in this scope")
        self.assertLessEqual(len(report.lab_status(mixed, width=30)), 30)
        # A template error: the learner's line with the error's text.
        template = [row(message="labs/01-saxpy does not compile, so no check of this lab can run:\n" +
                                build.compiler_errors(fixture("gcc-template.txt")))]
        self.assertEqual(report.lab_status(template, width=200),
                         "does not compile: labs/01-saxpy/saxpy.cu:12:48: error: static assertion failed: result type "
                         "must be constructible from input type")

    def test_lab_line(self):
        line = report.lab_line("02-transpose", [row(status=runner.PASSED), row(message=NOT_IMPL)])
        self.assertTrue(line.startswith("02   transpose"), line)
        self.assertIn("1/2", line)

    def test_overview_prints_one_line_for_an_untouched_lab_and_every_row_of_a_started_one(self):
        out = io.StringIO()
        table = report.Table(stream=out)
        lab = labs.select_labs(["01"])[0]
        with mock.patch.object(progress, "STATUS", progress.Status(out)):
            untouched = cli._LabView(table, lab, full=False)
            rows = [row(name=f"Correctness.C{i}", message=NOT_IMPL) for i in range(5)]
            for r in rows:
                untouched.add(r)
            untouched.done(rows)
            self.assertEqual(len(out.getvalue().splitlines()), 1, out.getvalue())
            self.assertIn("not started", out.getvalue())
            out.truncate(0)
            out.seek(0)
            started = cli._LabView(table, lab, full=False)
            rows = [row(name="Correctness.First", message=NOT_IMPL), row(name="Correctness.Second", message="differs")]
            for r in rows:
                started.add(r)
            started.done(rows)
        text = out.getvalue()
        self.assertIn("Correctness.First", text)   # held back until the lab showed it was started
        self.assertIn("Correctness.Second", text)
        self.assertNotIn("not started", text)

    def test_next_step(self):
        selected = labs.select_labs(["01", "02"])
        args = mock.Mock(solutions=False, labs=[])
        per_lab = {"01-saxpy": [row(status=runner.PASSED)], "02-transpose": [row(lab="02-transpose", message=NOT_IMPL)]}
        self.assertEqual(cli._next_step(selected, per_lab, args),
                         "Next: start with labs/02-transpose/README.md, then ./workbook check 02")
        per_lab["02-transpose"] = [row(lab="02-transpose", name="Correctness.Tiles", message="wrong")]
        self.assertIn("lab 02, Correctness.Tiles (details above)", cli._next_step(selected, per_lab, args))
        per_lab["02-transpose"] = [row(lab="02-transpose", status=runner.PASSED)]
        self.assertEqual(cli._next_step(selected, per_lab, args), "Every selected check passed.")


class Progress(unittest.TestCase):
    def test_non_interactive_output_has_no_control_characters(self):
        out = io.StringIO()   # not a terminal
        status = progress.Status(out)
        status.show("Building (sim) 3/10", timed=True)
        steps = progress.Milestones("Building (sim)", status)
        for i in range(1, 101):
            steps.update(i, 100)
        status.note("a plain line")
        status.clear()
        text = out.getvalue()
        self.assertNotRegex(text, r"[\x00-\x08\x0b-\x1f\x7f]", "control characters in a non-interactive run")
        self.assertEqual(text.splitlines(), ["Building (sim): 25% (25/100)", "Building (sim): 50% (50/100)",
                                             "Building (sim): 75% (75/100)", "a plain line"])

    def test_terminal_status_line_is_rewritten_in_place(self):
        out = io.StringIO()
        out.isatty = lambda: True
        with mock.patch.dict("os.environ", {"TERM": "xterm"}):
            status = progress.Status(out)
        status.show("Building (sim) 3/10")
        status.note("a row")
        status.clear()
        self.assertEqual(out.getvalue(), "\r\033[KBuilding (sim) 3/10\r\033[Ka row\n\r\033[KBuilding (sim) 3/10\r\033[K")


class CollectiveRows(unittest.TestCase):
    """Labs 09-12: one row per check with its rank counts grouped."""

    lab = labs.select_labs(["10"])[0]

    def outcome(self, n, status="passed", message="", tcp=False, **props):
        return mpi_launch.CheckResult("Correctness.RingAllreduceFloatSum", n, tcp, status, message, props)

    def test_passing_rank_counts_are_one_row(self):
        outcomes = {(n, False): self.outcome(n) for n in (1, 2, 3, 4, 5, 8)}
        outcomes[(3, True)] = self.outcome(3, tcp=True)
        r = collectives.group_results(self.lab, "Correctness.RingAllreduceFloatSum", outcomes)
        self.assertEqual((r.status, r.measured), (runner.PASSED, "ranks 1,2,3,4,5,8 + tcp 3"))

    def test_failures_name_their_rank_counts_once_per_message(self):
        outcomes = {(1, False): self.outcome(1), (2, False): self.outcome(2, "failed", "rank 1: 3 elements differ"),
                    (4, False): self.outcome(4, "failed", "rank 1: 3 elements differ"),
                    (3, True): self.outcome(3, "timeout", "stopped after 5 s in which no rank made progress", tcp=True)}
        r = collectives.group_results(self.lab, "Correctness.RingAllreduceFloatSum", outcomes)
        self.assertEqual(r.status, runner.FAILED)
        self.assertEqual(r.measured, "failed with ranks 2,4 + tcp 3")
        self.assertEqual(r.message.splitlines(), [
            "with 2 and 4 ranks: rank 1: 3 elements differ",
            "with 3 ranks over tcp: stopped after 5 s in which no rank made progress",
            "passed with 1 rank"])

    def test_one_mistake_at_every_rank_count_is_one_paragraph(self):
        outcomes = {(1, False): self.outcome(1, "failed", "Failed\nrank 0: " + str(ROOT) + "/labs/x.cpp:17: not "
                                                                                          "implemented yet: pingpong"),
                    (2, False): self.outcome(2, "failed", "Failed\nranks 0, 1: " + str(ROOT) + "/labs/x.cpp:17: not "
                                                                                              "implemented yet: pingpong")}
        r = collectives.group_results(self.lab, "Correctness.RingAllreduceFloatSum", outcomes)
        self.assertEqual(r.message, "with 1 and 2 ranks: rank 0: labs/x.cpp:17: not implemented yet: pingpong")

    def test_skipped_everywhere_is_not_measured_never_passed(self):
        outcomes = {(n, False): self.outcome(n, "skipped", "not measured: no GPU") for n in (2, 4)}
        r = collectives.group_results(self.lab, "Correctness.RingAllreduceFloatSum", outcomes)
        self.assertEqual(r.status, runner.NOT_MEASURED)

    def test_a_stopped_run_reports_what_finished(self):
        # SIGTERM (a `timeout` around ./workbook check) during the job of 3 ranks: the rows of the checks
        # that finished (or had already failed) come out, the others fail as not finished, naming where.
        names = ["Correctness.A", "Correctness.B", "Correctness.C"]

        def run_mpi_checks(binary, n, tests, **kwargs):
            if n == 3:
                raise runner.Terminated()
            return [mpi_launch.CheckResult(t, n, False, "failed" if (t, n) == ("Correctness.B", 2) else "passed",
                                           "rank 1: 3 elements differ" if t == "Correctness.B" else "", {})
                    for t in tests]

        delivered = []
        with mock.patch.object(mpi_launch, "run_mpi_checks", run_mpi_checks):
            with self.assertRaises(runner.Interrupted) as stop:
                collectives.run_lab(self.lab, "check_10", checks=names, on_result=delivered.append)
        self.assertTrue(stop.exception.terminated)
        self.assertEqual([r.name for r in delivered], ["Correctness.B"])
        self.assertEqual(delivered[0].status, runner.FAILED)
        self.assertIn("rank 1: 3 elements differ", delivered[0].message)
        self.assertIn("not run with 3, 4, 5 and 8 ranks: the run was stopped", delivered[0].message)
        self.assertEqual([r.name for r in stop.exception.rows], ["Correctness.A", "Correctness.C"])
        for r in stop.exception.rows:
            self.assertEqual(r.status, runner.FAILED)
            self.assertIn("not finished: the run was stopped by SIGTERM", r.message)
            self.assertIn("the job with 3 ranks had run", r.message)
            self.assertIn("not run with 4, 5 and 8 ranks", r.message)
            self.assertIn("finished with 1 and 2 ranks", r.message)

    def test_a_run_stopped_in_its_first_job_fails_every_check_as_not_finished(self):
        def run_mpi_checks(binary, n, tests, **kwargs):
            raise runner.Terminated()

        delivered = []
        with mock.patch.object(mpi_launch, "run_mpi_checks", run_mpi_checks):
            with self.assertRaises(runner.Interrupted) as stop:
                collectives.run_lab(self.lab, "check_10", checks=["Correctness.A", "Correctness.B"],
                                    on_result=delivered.append)
        self.assertEqual(delivered, [])
        self.assertEqual([r.name for r in stop.exception.rows], ["Correctness.A", "Correctness.B"])
        self.assertIn("the job with 1 rank had run", stop.exception.rows[0].message)
        self.assertNotIn("finished with", stop.exception.rows[0].message)

    def test_measured_values_per_rank_count_for_performance(self):
        name = "Performance.PipelinedRingBusbwVsMpiAllreduce"
        outcomes = {(n, False): self.outcome(n, measured=f"0.{n}x") for n in (2, 4)}
        r = collectives.group_results(self.lab, name, outcomes)
        self.assertEqual(r.measured, "n=2: 0.2x; n=4: 0.4x")


class BenchPlot(unittest.TestCase):
    """bench/collectives/plot.py draws bench_collectives' CSV (`./workbook bench --plot`)."""

    CSV = ("collective,impl,ranks,bytes,in_place,time_us,algbw_gbs,busbw_gbs,wrong\n"
           "broadcast,binomial,2,1024,0,5.0,0.2,0.2,0\nbroadcast,binomial,2,16384,0,9.0,1.8,1.8,0\n"
           "broadcast,mpi,2,1024,0,4.0,0.25,0.25,0\nbroadcast,mpi,2,16384,0,8.0,2.0,2.0,0\n"
           "alltoall,pairwise,4,4096,0,7.0,0.5,0.4,0\nalltoall,pairwise,4,4096,1,7.5,0.5,0.4,0\n")

    def python_with_matplotlib(self):
        for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
            if Path(python).exists() and subprocess.run([python, "-c", "import matplotlib"],
                                                         capture_output=True).returncode == 0:
                return python
        return None

    def test_plot_writes_a_png_per_csv(self):
        import tempfile
        python = self.python_with_matplotlib()
        if not python:
            self.skipTest("matplotlib is not installed (python3-matplotlib)")
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "bench_collectives.csv"
            csv.write_text(self.CSV)
            out = subprocess.run([python, str(ROOT / "bench/collectives/plot.py"), str(csv)],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            png = Path(tmp) / "bench_collectives.png"
            self.assertTrue(png.exists())
            self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")

    def test_series_keep_out_of_place_rows_per_algorithm_and_rank_count(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("plot", ROOT / "bench/collectives/plot.py")
        plot = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(plot)
        import csv as csvmod
        rows = list(csvmod.DictReader(io.StringIO(self.CSV)))
        data = plot.series(rows)
        self.assertEqual(sorted(data), ["alltoall", "broadcast"])
        self.assertEqual(data["broadcast"][("binomial", 2)], [(1024, 0.2), (16384, 1.8)])
        self.assertEqual(data["alltoall"][("pairwise", 4)], [(4096, 0.4)])


class EarlierLabs(unittest.TestCase):
    """A lab that calls an earlier lab's unfinished function says which, at once and in the rows."""

    lab = labs.select_labs(["08"])[0]

    def tree(self, tmp, attention_written=True):
        root = Path(tmp)
        (root / "checker/labs/08-attention").mkdir(parents=True)
        (root / "checker/labs/08-attention/CMakeLists.txt").write_text(
            (ROOT / "checker/labs/08-attention/CMakeLists.txt").read_text())
        for d in ("labs/05-gemm", "labs/06-softmax-layernorm", "labs/08-attention"):
            (root / d).mkdir(parents=True)
        (root / "labs/05-gemm/gemm.cu").write_text(
            "cudaError_t sgemm_naive(int M) {\n  return launch(M);\n}\n\n"
            "cudaError_t sgemm(int M, int N) {\n  (void)M; (void)N;\n  return cudaErrorNotYetImplemented;\n}\n")
        (root / "labs/06-softmax-layernorm/softmax_layernorm.cu").write_text(
            "cudaError_t softmax_forward(const float* x, float* y, int rows, int cols) {\n  return run(x, y);\n}\n")
        body = ("  if (auto e = sgemm(1, 2); e) return e;\n  return softmax_forward(q, o, 1, 1);\n" if attention_written
                else "  return cudaErrorNotYetImplemented;\n")
        (root / "labs/08-attention/attention.cu").write_text(
            "cudaError_t attention_unfused(const float* q, float* o) {\n" + body + "}\n")
        return root

    def row(self, message):
        return runner.CheckResult(lab=self.lab.id, name="Correctness.Unfused", status=runner.FAILED, message=message,
                                  hint="the check's own hint")

    def test_uses_come_from_the_labs_cmake_file(self):
        self.assertEqual(prerequisites.uses(self.lab), ["05-gemm/gemm.cu", "06-softmax-layernorm/softmax_layernorm.cu"])

    def test_the_unfinished_functions_the_lab_calls_are_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            root = self.tree(tmp)
            found = prerequisites.unfinished(self.lab, "labs", root)
            self.assertEqual([(u.lab, u.function, u.path) for u in found], [("05", "sgemm", "labs/05-gemm/gemm.cu")])
            self.assertIn("lab 08 calls lab 05's sgemm() (labs/05-gemm/gemm.cu), which is not implemented yet",
                          found[0].line("08"))
            # The real solutions are finished.
            self.assertEqual(prerequisites.unfinished(self.lab, "solutions"), [])
            # A file that comes from a provided build (./workbook check --provided) is not the learner's.
            self.assertEqual(prerequisites.unfinished(self.lab, "labs", root, skip={"05-gemm/gemm.cu"}), [])

    def test_a_written_function_that_passed_the_error_on_is_not_called_unfinished(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            root = self.tree(tmp)
            missing = prerequisites.unfinished(self.lab, "labs", root)
            row = self.row("not implemented yet: attention_unfused in labs/08-attention/attention.cu (...)")
            prerequisites.explain(self.lab, row, missing, "labs", root)
            self.assertTrue(row.message.startswith("needs lab 05 first: attention_unfused() is written, but it calls "
                                                   "lab 05's sgemm() (labs/05-gemm/gemm.cu)"), row.message)
            self.assertIn("./workbook check 05", row.hint)
            self.assertFalse(report.not_started(row), "an earlier lab's skeleton is not this lab's")

    def test_an_earlier_labs_function_named_in_the_message_is_not_taken_for_the_labs_own(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            root = self.tree(tmp)
            missing = prerequisites.unfinished(self.lab, "labs", root)
            message = "not implemented yet: sgemm in labs/08-attention/attention.cu (...)"  # called, not defined here
            row = self.row(message)
            prerequisites.explain(self.lab, row, missing, "labs", root)
            self.assertEqual(row.message, message)

    def test_the_labs_own_unfinished_function_keeps_its_message(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            root = self.tree(tmp, attention_written=False)
            missing = prerequisites.unfinished(self.lab, "labs", root)
            message = "not implemented yet: attention_unfused in labs/08-attention/attention.cu (...)"
            row = self.row(message)
            prerequisites.explain(self.lab, row, missing, "labs", root)
            self.assertEqual((row.message, row.hint), (message, "the check's own hint"))

    def test_a_message_naming_another_labs_file_says_so_first(self):
        row = self.row("rank 0: labs/10-ring-allreduce/ring_allreduce.cpp:42: not implemented yet: ring_allreduce")
        runner.name_earlier_lab("12-data-parallel-trainer", row)
        self.assertTrue(row.message.startswith("needs lab 10 first: ring_allreduce() in "
                                               "labs/10-ring-allreduce/ring_allreduce.cpp is not implemented yet"))
        solution = self.row("with 2 ranks: rank 0: solutions/10-ring-allreduce/ring_allreduce.cpp:73: not implemented "
                            "yet: ring_allreduce")
        runner.name_earlier_lab("12-data-parallel-trainer", solution)
        self.assertTrue(solution.message.startswith("needs lab 10 first: ring_allreduce() in "
                                                    "solutions/10-ring-allreduce/ring_allreduce.cpp"), solution.message)
        own = self.row("not implemented yet: sgemm in labs/05-gemm/gemm.cu")
        runner.name_earlier_lab("05-gemm", own)
        self.assertEqual(own.message, "not implemented yet: sgemm in labs/05-gemm/gemm.cu")


if __name__ == "__main__":
    unittest.main(verbosity=2)
