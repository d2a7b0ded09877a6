"""Sharded logs of sparse (top-k) next-token distributions: the format, its writer, reader and converters.

A log is a directory of Parquet shards and a ``manifest.json`` (docs/guide/logs.md). :class:`LogWriter`
writes one, :func:`open_logs` reads it in chunks, and :mod:`mdsd_fast.logs.convert` turns
OpenAI-style JSONL pairs or a dataset into one. Needs pyarrow (the ``logs`` extra).
"""

from __future__ import annotations

from .reader import LogChunk, Logs, open_logs
from .writer import FORMAT, FORMAT_VERSION, MANIFEST, META_COLUMNS, LogWriter

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "META_COLUMNS", "LogChunk", "LogWriter", "Logs", "open_logs"]
