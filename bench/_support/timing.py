"""Timing side by side on a shared machine, and the machine a run was taken on."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

import numpy as np


def side_by_side(f, g, repeats: int, clock=time.perf_counter, stat=statistics.median) -> tuple[float, float]:
    """stat (median by default) of f's and g's times over `repeats` alternate calls. On a machine
    shared with other jobs, clock=time.thread_time (CPU time of this thread: time slices lost to
    other processes do not count; single-threaded calls only) and stat=min are steadier."""
    tf, tg = [], []
    f(), g()  # warm-up (allocations, page faults)
    for _ in range(repeats):
        t0 = clock()
        f()
        t1 = clock()
        g()
        t2 = clock()
        tf.append(t1 - t0)
        tg.append(t2 - t1)
    return stat(tf), stat(tg)


def machine_info() -> dict[str, object]:
    import mdsd_fast as mf

    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "mdsd_fast": mf.__version__,
        "platform": platform.platform(),
    }
