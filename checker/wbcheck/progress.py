"""Progress of long steps: one status line on a terminal, plain lines elsewhere.

On a terminal the status line ("Building (sim) 123/456 ...", "03 reduction:
Correctness.ReduceSum 4 s") is rewritten in place with a carriage return and erased before any
other output. In a non-interactive run (CI, Gradescope, a pipe) nothing transient is printed:
`note()` lines are plain text without control characters, so logs stay readable.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time


def interactive(stream) -> bool:
    return stream.isatty() and os.environ.get("TERM") != "dumb"


class Status:
    """The transient status line of one output stream (all output goes through print(), so
    erase() before printing anything else; Table and note() do)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tty = interactive(self.stream)
        self.lock = threading.RLock()
        self.shown = False
        self.text = ""
        self.since = None          # show the elapsed time since this moment, when set
        self._ticker = None
        self._stop = threading.Event()

    def _draw(self) -> None:
        text = self.text
        if self.since is not None:
            text += f" {time.monotonic() - self.since:.0f} s"
        width = shutil.get_terminal_size((100, 24)).columns - 1
        self.stream.write("\r\033[K" + text[:width])
        self.stream.flush()
        self.shown = True

    def show(self, text: str, timed: bool = False) -> None:
        """Replaces the status line (terminal only); @p timed appends the seconds since this call
        and keeps them current."""
        with self.lock:
            self.text = text
            self.since = time.monotonic() if timed else None
            if not self.tty:
                return
            self._draw()
            if timed and self._ticker is None:
                self._stop.clear()
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self.lock:
                if self.text and self.since is not None:
                    self._draw()

    def erase(self) -> None:
        with self.lock:
            if self.tty and self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self.shown = False

    def clear(self) -> None:
        """Erases the line and stops updating it."""
        with self.lock:
            self.text = ""
            self.since = None
            self.erase()
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join(timeout=2)
            self._ticker = None

    def note(self, text: str) -> None:
        """A permanent line (both modes), printed above the status line."""
        with self.lock:
            self.erase()
            print(text, file=self.stream, flush=True)
            if self.tty and self.text:
                self._draw()


STATUS = Status()


class Milestones:
    """Plain-text progress of a counted step for non-interactive runs: a line at each quarter."""

    def __init__(self, label: str, status: Status = STATUS, marks=(25, 50, 75)):
        self.label = label
        self.status = status
        self.marks = list(marks)

    def update(self, done: int, total: int) -> None:
        if total <= 0:
            return
        if self.status.tty:
            self.status.show(f"{self.label} {done}/{total}")
            return
        percent = 100 * done // total
        while self.marks and percent >= self.marks[0]:
            self.marks.pop(0)
            self.status.note(f"{self.label}: {percent}% ({done}/{total})")
