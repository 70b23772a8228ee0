#!/usr/bin/env python3
"""`./workbook provide` and `./workbook check --provided` on this build (sim), end to end.

An instructor builds labs 05 and 06's reference as libraries; lab 08's learner binary then links
them in place of labs/05-gemm/gemm.cu and labs/06-softmax-layernorm/softmax_layernorm.cu (seen in
its symbols: labs/05-gemm/gemm.cu is no longer in it), and the check says so first. A library built against other headers is refused with the reason, a directory that is not
a provided build is refused with what to do, and a check without --provided links the learner's
own labs again. (That a provided build is a whole earlier lab, every check of lab 08's solution
passing with it, is checker.lab08.provided_earlier_labs.)

Reconfigures the build it runs in (WB_BUILD_DIR_SIM) and relinks the learner binaries of labs 07,
08 and 12; it restores them at the end, and runs alone (RUN_SERIAL).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("WB_BUILD_DIR_SIM", ROOT / "build" / "sim"))
WORKER = BUILD / "bin" / "check_08_attention_worker"


def workbook(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "workbook"), *args, "--backend", "sim", "--no-install"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def links_labs_gemm() -> bool:
    """Whether lab 08's learner binary holds labs/05-gemm/gemm.cu, which is linked whole; a
    provided library's members are linked only where the lab calls them, and the skeleton of lab
    08 calls none."""
    out = subprocess.run(["nm", "-C", str(WORKER)], capture_output=True, text=True, check=True).stdout
    return " T sgemm(int, int, int, float," in out


class Provided(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wb-provided-")
        cls.dir = Path(cls.tmp) / "provided"
        cls.made = workbook("provide", "05", "06", "--out", str(cls.dir))

    @classmethod
    def tearDownClass(cls):
        workbook("check", "08")  # the learner's own labs again
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_provide_writes_libraries_and_a_manifest_without_source(self):
        self.assertEqual(self.made.returncode, 0, self.made.stdout + self.made.stderr)
        manifest = json.loads((self.dir / "provided.json").read_text())
        self.assertEqual(manifest["format"], 1)
        self.assertEqual(sorted(manifest["archives"]), ["05-gemm/gemm.cu", "06-softmax-layernorm/softmax_layernorm.cu"])
        for use, flavours in manifest["archives"].items():
            self.assertEqual(sorted(flavours), ["sim", "sim-analysis"], use)  # lab 12 links plain, 07 and 08 instrumented
            for entry in flavours.values():
                self.assertEqual(len(entry["interface"]), 64)
                archive = (self.dir / entry["file"]).read_bytes()
                self.assertTrue(archive.startswith(b"!<arch>\n"), entry["file"])
                # No line of the reference's text is in it (a comment, and a line of code).
                self.assertNotIn(b"The ladder (each version one step up", archive)
                self.assertNotIn(b"acc += As[ty][k] * Bs[k][tx];", archive)
        self.assertIn("./workbook check 07 --provided", self.made.stdout)

    def test_2_check_links_the_provided_labs_and_says_so(self):
        done = workbook("check", "08", "--provided", str(self.dir))
        text = done.stdout + done.stderr
        self.assertEqual(done.returncode, 1, text)  # lab 08 itself is the skeleton
        self.assertIn("note: lab 08 links lab 05's gemm.cu and lab 06's softmax_layernorm.cu from the provided build "
                      f"in {self.dir}, not from labs/", text)
        self.assertIn("lab 05's provided gemm.cu", text)  # the binary's sources, in its messages
        self.assertNotIn("needs lab 05", text)
        self.assertFalse(links_labs_gemm())

    def test_3_a_library_built_against_other_headers_is_refused(self):
        other = Path(self.tmp) / "other"
        shutil.copytree(self.dir, other)
        manifest = json.loads((other / "provided.json").read_text())
        manifest["archives"]["05-gemm/gemm.cu"]["sim-analysis"]["interface"] = "0" * 64
        (other / "provided.json").write_text(json.dumps(manifest))
        done = workbook("check", "08", "--provided", str(other))
        text = done.stdout + done.stderr
        self.assertIn(f"note: {other} has lab 05's gemm.cu built against other headers or another compiler than "
                      "this build", text)
        self.assertIn("so lab 08 links your own labs/05-gemm/gemm.cu. Ask for a provided build made from this "
                      "version and backend (./workbook provide 05 --backend sim)", text)
        self.assertIn("note: lab 08 links lab 06's softmax_layernorm.cu from the provided build", text)
        self.assertTrue(links_labs_gemm())

    def test_4_what_is_not_a_provided_build_is_refused(self):
        missing = workbook("check", "08", "--provided", str(Path(self.tmp) / "absent"))
        self.assertEqual(missing.returncode, 2)
        self.assertIn("no such directory. It is made on a tree with solutions/ by ./workbook provide", missing.stderr)
        empty = Path(self.tmp) / "empty"
        empty.mkdir()
        done = workbook("check", "08", "--provided", str(empty))
        self.assertEqual(done.returncode, 2)
        self.assertIn("it has no provided.json, so it was not made by ./workbook provide", done.stderr)
        both = workbook("check", "08", "--provided", str(self.dir), "--solutions")
        self.assertEqual(both.returncode, 2)
        self.assertIn("the solutions' binaries always link the earlier labs' solutions", both.stderr)
        nothing = workbook("provide", "03", "--out", str(empty))
        self.assertEqual(nothing.returncode, 2)
        self.assertIn("no later lab calls lab 03", nothing.stderr)

    def test_5_without_provided_the_learners_labs_are_linked_again(self):
        done = workbook("check", "08")
        self.assertNotIn("from the provided build", done.stdout)
        self.assertIn("Finish lab 05 first", done.stdout)  # the learner's skeleton of lab 05 is linked
        self.assertTrue(links_labs_gemm())
        status = json.loads((BUILD / "provided-status.json").read_text())
        self.assertEqual(status["dir"], "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
