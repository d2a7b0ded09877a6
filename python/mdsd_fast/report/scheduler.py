"""Reaching a Dask scheduler, or failing in seconds with one line that says why.

``dask.distributed.Client`` retries a refused connection for 30 s and then raises a long error,
and waits forever on a port that accepts but never speaks Dask. The report checks first.
"""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

#: Seconds to wait for a Dask scheduler to answer (a reachable one answers in milliseconds).
SCHEDULER_TIMEOUT = 5.0


def check_scheduler(address: str, timeout: float | None = None) -> None:
    """Fail fast, with one line, when no Dask scheduler answers at ``address``: a TCP connection
    within ``timeout`` seconds (default SCHEDULER_TIMEOUT; tcp:// and tls:// addresses), then
    ``dask.distributed`` installed, then Dask's handshake within the same time (a port that
    accepts but never answers would otherwise hang the client for good)."""
    t = SCHEDULER_TIMEOUT if timeout is None else timeout
    proto, sep, _ = address.partition("://")
    if not sep or proto in ("tcp", "tls"):
        try:
            parts = urlsplit(address if sep else f"tcp://{address}")
            host, port = parts.hostname, parts.port
        except ValueError as exc:
            raise ValueError(f"scheduler: cannot read the address {address!r} ({exc})") from None
        if not host or port is None:
            raise ValueError(f"scheduler: expected tcp://HOST:PORT, got {address!r}")
        try:
            socket.create_connection((host, port), timeout=t).close()
        except OSError as exc:
            why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise ValueError(f"scheduler: cannot reach a Dask scheduler at {address} within {t:g} s ({why})") from None
    try:
        from distributed.comm.core import connect
    except ImportError:
        raise ImportError("scheduler: needs dask.distributed: pip install 'mdsd_fast[dask]'") from None

    async def handshake() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=t), t)
        await comm.close()

    with ThreadPoolExecutor(1) as pool:  # a loop of its own: the caller may be inside one (Jupyter)
        try:
            pool.submit(asyncio.run, handshake()).result()
        except (asyncio.TimeoutError, OSError, ValueError) as exc:
            raise ValueError(
                f"scheduler: {address} does not answer as a Dask scheduler within {t:g} s ({type(exc).__name__})"
            ) from None


def client_timeout() -> str:
    """The connection timeout handed to ``dask.distributed.Client``."""
    return f"{SCHEDULER_TIMEOUT:g}s"
