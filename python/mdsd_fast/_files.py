"""Output files written atomically: a file the package writes appears whole or not at all.

Every writer of the package (reports, logs, datasets, tree files) goes through :func:`atomic_write`
or :class:`AtomicFile`: the bytes go to a hidden temporary file beside the target
(``.tmp-<name>-<random>``), which is renamed over the target only once it is complete. A killed
process leaves at most that temporary file, never a half-written target; a failed write (a full
disk, a file size limit, an error while producing the bytes) removes the temporary file and raises
an OSError naming the target it could not write. Files are created with mode 0666 minus the umask
(0644 under the usual umask 022), as ``open(path, "w")`` would, not the 0600 of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["AtomicFile", "atomic_write", "not_written"]

#: Prefix of the temporary files (a leftover one is the trace of a killed writer).
TMP_PREFIX = ".tmp-"


def not_written(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """An OSError for ``exc`` that names ``path`` (the file the user asked for, not a temporary one)."""
    code, reason = exc.errno, exc.strerror
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)  # pyarrow's errors carry it in the text
    if found:
        code = int(found[1])
        reason = os.strerror(code)
    return OSError(code or errno.EIO, f"not written ({reason or exc or type(exc).__name__})", os.fspath(path))


class AtomicFile:
    """A binary file written to a temporary name beside ``path``: :meth:`commit` renames it over
    ``path``, :meth:`discard` (or an exception inside a ``with`` block) removes it. The parent
    directory is created if needed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f"{TMP_PREFIX}{self.path.name}-{secrets.token_hex(4)}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL on a random name; mode 0o666 is reduced by the umask, as for any new file
            fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            raise not_written(exc, self.path) from None
        self.fh: IO[bytes] = os.fdopen(fd, "wb")

    def commit(self) -> Path:
        """Close the temporary file and rename it over the target; on failure remove it and raise
        an OSError naming the target."""
        try:
            self.fh.close()
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise not_written(exc, self.path) from None
        return self.path

    def discard(self) -> None:
        """Close and remove the temporary file (the target is left as it was)."""
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)

    def __enter__(self) -> IO[bytes]:
        return self.fh

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
            return
        self.discard()
        if isinstance(exc, OSError):  # the write itself failed: name the file the user asked for
            raise not_written(exc, self.path) from None


def atomic_write(path: str | os.PathLike[str], content: str | bytes | Callable[[IO[bytes]], Any]) -> Path:
    """Write ``content`` (text as UTF-8, bytes, or a function that writes to a binary file object)
    to ``path`` atomically (see the module docstring); returns the path."""
    with AtomicFile(path) as fh:
        if callable(content):
            content(fh)
        else:
            fh.write(content.encode("utf-8") if isinstance(content, str) else content)
    return Path(path)
