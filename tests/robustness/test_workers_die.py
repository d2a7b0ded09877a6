"""Worker processes end with their parent, even when the parent is killed by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mdsd_fast

#: Where the imported mdsd_fast lives (an install's site-packages, or an in-place build's python/),
#: for the child processes.
PY = Path(mdsd_fast.__file__).resolve().parents[1]

CHILD = """
import os, sys, time
from mdsd_fast._workers import pool
with pool(2) as p:
    pids = set()
    while len(pids) < 2:
        pids |= {f.result() for f in [p.submit(os.getpid) for _ in range(8)]}
    print(" ".join(map(str, sorted(pids))), flush=True)
    p.submit(time.sleep, 600)
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its reaper has ended too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_workers_end_when_the_parent_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(PY)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        workers = [int(x) for x in line.split()]
        assert len(workers) == 2 and all(_alive(w) for w in workers)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers), "a worker outlived its killed parent"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
