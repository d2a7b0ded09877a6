"""Local worker processes that die with their parent.

``concurrent.futures.ProcessPoolExecutor`` cleans its workers up on a normal exit or an exception,
but a parent killed by SIGKILL (or the OOM killer) leaves them asleep on their call queue forever.
Each worker here watches its parent: on Linux the kernel sends it SIGKILL the moment the parent
dies (``PR_SET_PDEATHSIG``); everywhere, a daemon thread polls the parent's pid once a second and
ends the worker when it has changed (the parent died and the worker was re-parented).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

#: Seconds between two looks at the parent's pid (the fallback where the kernel cannot tell).
PARENT_POLL = 1.0

_PR_SET_PDEATHSIG = 1
_SIGKILL = 9


def _die_with(parent: int) -> None:
    """Worker initializer: end this process when ``parent`` is gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the thread below still ends the worker
            pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="mdsd-fast-parent-watch", daemon=True).start()


def pool(workers: int) -> ProcessPoolExecutor:
    """A process pool of ``workers`` processes, each of which dies with this process."""
    return ProcessPoolExecutor(max_workers=workers, initializer=_die_with, initargs=(os.getpid(),))
