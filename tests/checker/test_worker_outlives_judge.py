#!/usr/bin/env python3
"""A split check's worker whose judge has gone (the judge finished its check without reading the
reply to a call it posted, or was stopped) ends quietly with status 0: before, its reply raised an
uncaught ChannelError, and the runner reported "The lab's code crashed at
checker/support/remote/channel.cpp" under the check's own failure (seen under load in
checker.lab01_wrong.zero_size_launch).

usage: test_worker_outlives_judge.py WORKER_BINARY
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import unittest

WORKER = None


class WorkerOutlivesJudge(unittest.TestCase):
    def test_reply_to_a_judge_that_has_gone(self):
        judge, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        proc = subprocess.Popen([WORKER, f"--wb-channel-fd={worker_end.fileno()}"], pass_fds=(worker_end.fileno(),),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        worker_end.close()
        # Stopped, the worker reads the request only after the judge's end is closed, so its reply
        # always finds the channel closed (no race with the close).
        os.kill(proc.pid, signal.SIGSTOP)
        request = struct.pack("<IQ", 0xFFFF, 0)  # a request the worker does not know: it replies an error
        judge.sendall(request)
        judge.close()
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=30)
        text = err.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, text)
        self.assertNotIn("terminate called", text)
        self.assertNotIn("ChannelError", text)


if __name__ == "__main__":
    WORKER = sys.argv.pop(1)
    unittest.main(verbosity=2)
