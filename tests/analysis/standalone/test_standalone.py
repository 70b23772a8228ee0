"""`./workbook run|sanitize|profile` on standalone CUDA programs: the sanitizer's exit status and
report, a clean program staying clean, and the profile's metrics."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def workbook(*args):
    return subprocess.run([sys.executable, str(ROOT / "workbook"), *args, ], cwd=ROOT, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)


class Standalone(unittest.TestCase):
    def test_run_executes_the_program(self):
        p = workbook("run", "--no-install", str(HERE / "off_by_one.cu"), "--", "100")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("scale:", p.stdout)

    def test_sanitize_reports_the_off_by_one_and_fails(self):
        p = workbook("sanitize", "--no-install", str(HERE / "off_by_one.cu"), "--", "100")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("Invalid __global__ read of size 4 bytes", p.stderr)
        self.assertRegex(p.stderr, r"off_by_one\.cu:8\b")
        self.assertIn("0 bytes after the end of a 400-byte allocation", p.stderr)
        self.assertRegex(p.stderr, r"ERROR SUMMARY: [1-9]")

    def test_sanitize_names_a_reservation_with_nothing_mapped(self):
        p = workbook("sanitize", "--no-install", str(HERE / "unmapped_access.cu"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("Invalid __global__ write of size 4 bytes", p.stderr)
        self.assertRegex(p.stderr, r"unmapped_access\.cu:8\b")
        self.assertIn("reserved by cuMemAddressReserve where no memory is mapped", p.stderr)
        self.assertIn("mapped: cudaSuccess", p.stdout)
        self.assertIn("reserved only: cudaErrorIllegalAddress", p.stdout)

    def test_sanitize_passes_a_correct_program(self):
        p = workbook("sanitize", "--no-install", "--tool", "all", str(HERE / "strided_copy.cu"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("ERROR SUMMARY: 0 errors", p.stderr)

    def test_sanitize_passes_a_graph_kernel_node(self):
        # The node's launch runs a callable that the graph keeps in the heap: the kernel's threads read
        # its captures, which memcheck must not take for the kernel reading host memory.
        p = workbook("sanitize", "--no-install", "--tool", "all", str(HERE / "graph_kernel_node.cu"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("cudaSuccess: 0 of 64 elements are not 3", p.stdout)
        self.assertRegex(p.stderr, r"ERROR SUMMARY: 0 errors")

    def test_profile_shows_sectors_per_request(self):
        p = workbook("profile", "--no-install", str(HERE / "strided_copy.cu"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        coalesced = re.search(r"kernel 'copy_coalesced'.*?global loads \(sectors\)\s+\d+\s+\d+\s+([\d.]+)", p.stdout, re.S)
        strided = re.search(r"kernel 'copy_strided'.*?global loads \(sectors\)\s+\d+\s+\d+\s+([\d.]+)", p.stdout, re.S)
        self.assertIsNotNone(coalesced, p.stdout)
        self.assertIsNotNone(strided, p.stdout)
        self.assertEqual(float(coalesced.group(1)), 4.0)
        self.assertEqual(float(strided.group(1)), 32.0)

    def test_bad_file_gives_a_clear_message(self):
        p = workbook("run", "--no-install", str(HERE / "no_such_file.cu"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no_such_file.cu: no such file", p.stderr)


if __name__ == "__main__":
    unittest.main()
