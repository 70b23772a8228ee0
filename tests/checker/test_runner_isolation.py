#!/usr/bin/env python3
"""The runner turns crashes, hangs, early exits, exceptions and floods of output of a
check into clear failed results, kills hung checks with their whole process group, never
counts NOT MEASURED as passed, and keeps running the other checks.

usage: test_runner_isolation.py FAKE_CHECKS_BINARY
"""

import os
import signal
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "checker"))

from wbcheck import labs, report, runner  # noqa: E402

BINARY = None


def fake_lab() -> labs.Lab:
    return labs.Lab(id="99-fake", number="99", name="fake", title="fake", stage=1,
                    directory=ROOT, timeout_s=3.0)


class RunnerIsolation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pid_file = Path(cls.tmp.name) / "grandchild.pid"
        os.environ["WB_FAKE_PID_FILE"] = str(cls.pid_file)
        cls.start = time.monotonic()
        cls.results = {r.name: r for r in runner.run_lab_checks(fake_lab(), BINARY, timeout_s=3.0)}
        cls.elapsed = time.monotonic() - cls.start

    def assert_ends(self, pid: int, what: str) -> None:
        """The process @p pid (a check's grandchild) is gone within 5 s."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        self.fail(f"grandchild {pid} of {what}")

    def test_all_checks_ran(self):
        self.assertEqual(len(self.results), 9, sorted(self.results))

    def test_pass_and_properties(self):
        r = self.results["Correctness.Passes"]
        self.assertEqual(r.status, runner.PASSED)
        self.assertEqual(r.measured, "42 things")
        self.assertEqual(r.threshold, ">= 42 things")

    def test_failure_message_and_hint(self):
        r = self.results["Correctness.FailsWithMessage"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertEqual(r.message, "y[3]: expected 1, got 2")
        self.assertEqual(r.hint, "a hint from the check")

    def test_segfault(self):
        r = self.results["Correctness.Segfaults"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("crashed with SIGSEGV", r.message)
        self.assertIn("invalid __global__ write", r.stderr_tail)

    def test_abort(self):
        r = self.results["Correctness.Aborts"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("SIGABRT", r.message)

    def test_exit(self):
        r = self.results["Correctness.ExitsEarly"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("exited with status 3 before reporting", r.message)

    def test_exception(self):
        r = self.results["Correctness.Throws"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("exception: kernel.cu:7: cudaMalloc failed", r.message)

    def test_hang_is_killed_with_its_group(self):
        r = self.results["Correctness.HangsWithChild"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("time limit of 3 s exceeded", r.message)
        self.assertIn("hang or deadlock", r.message)
        self.assert_ends(int(self.pid_file.read_text()), "the hung check survived the time-out")

    def test_flood_is_bounded(self):
        r = self.results["Correctness.FloodsOutput"]
        self.assertEqual(r.status, runner.FAILED)
        self.assertIn("flooded", r.message)

    def test_not_measured_is_not_passed(self):
        r = self.results["Performance.NotMeasured"]
        self.assertEqual(r.status, runner.NOT_MEASURED)
        self.assertIn("no metrics in this build", r.message)
        data = report.gradescope_results(list(self.results.values()), "sim", "labs", 1.0)
        t = next(t for t in data["tests"] if t["name"].endswith("Performance.NotMeasured"))
        self.assertEqual((t["status"], t["score"]), ("failed", 0.0))
        self.assertIn("NOT MEASURED", t["output"])
        xml = report.junit_xml(list(self.results.values()), "sim").getroot()
        self.assertEqual(xml.get("skipped"), "1")
        self.assertEqual(xml.get("failures"), "7")

    def test_sigterm_reports_the_running_check_and_kills_it(self):
        # `timeout ./workbook check`: SIGTERM while a check hangs ends it at once with its whole
        # process group, and the runner says which check was running, for how long.
        from wbcheck import cli
        self.pid_file.unlink(missing_ok=True)
        previous = signal.signal(signal.SIGTERM, cli._terminate)
        timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGTERM))
        start = time.monotonic()
        timer.start()
        try:
            with self.assertRaises(runner.Interrupted) as stop:
                runner.run_lab_checks(fake_lab(), BINARY, checks=["Correctness.HangsWithChild"], timeout_s=60.0)
        finally:
            timer.cancel()
            signal.signal(signal.SIGTERM, previous)
        self.assertLess(time.monotonic() - start, 15)
        self.assertTrue(stop.exception.terminated)
        [row] = stop.exception.rows
        self.assertEqual((row.name, row.status), ("Correctness.HangsWithChild", runner.FAILED))
        self.assertRegex(row.message, r"not finished: the run was stopped by SIGTERM .* after this check had "
                                      r"run [12] s")
        self.assert_ends(int(self.pid_file.read_text()), "the interrupted check survived")

    def test_time_is_bounded(self):
        # One 3 s time-out plus quick checks: well under the sum of generous limits.
        self.assertLess(self.elapsed, 30)


if __name__ == "__main__":
    BINARY = Path(sys.argv.pop(1))
    unittest.main(verbosity=2)
