#!/usr/bin/env python3
"""Unit tests of the workbook CLI's pieces that need no build: lab metadata and
selection, dependency reporting, the exit status of a bad command line."""

import subprocess
import sys
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import deps, labs  # noqa: E402


class LabMetadata(unittest.TestCase):
    def test_every_lab_json_loads_and_names_valid_groups(self):
        found = labs.all_labs()
        self.assertTrue(found, "no labs found")
        for lab in found:
            self.assertIn(lab.stage, (1, 2, 3, 4), lab.id)
            self.assertTrue(lab.checks, f"{lab.id}: lab.json lists no checks")
            for check in lab.checks:
                self.assertIn(check.group, labs.GROUPS, f"{lab.id}: {check.name}")
                self.assertGreater(check.weight, 0, f"{lab.id}: {check.name}")
            for source in lab.sources:
                self.assertTrue((ROOT / "labs" / lab.id / source).is_file(), f"{lab.id}: {source}")

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
        self.assertIn("matplotlib", deps.required("bench", "sim"))  # the benchmarks' plots
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
