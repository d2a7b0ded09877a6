"""Writing a sharded log (docs/guide/logs.md): the format's constants and Parquet schema, and :class:`LogWriter`.

Read logs with :mod:`mdsd_fast.logs` (which re-exports ``LogWriter``). Needs pyarrow (the ``logs`` extra).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._files import atomic_write, not_written
from ..inputs.args import _row_ids
from ..inputs.rules import MAX_V, SUM_TOL
from .manifest import (
    _STRINGS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    META_COLUMNS,
    check_new_log,
    closed_shards,
    group_counts,
    log_state,
)

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "META_COLUMNS", "LogWriter", "check_new_log"]
#: Shard files are written with page checksums, checked on every read (a flipped bit is named).
_PARQUET_OPTS: dict[str, Any] = dict(compression="zstd", write_page_checksum=True, use_dictionary=list(_STRINGS))


def _arrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (pa.parquet below)
    except ImportError:
        raise ImportError("logs: the log format needs pyarrow: pip install 'mdsd_fast[logs]'") from None
    return pa


def _schema(pa: Any, dtype: str) -> Any:
    f = pa.float32() if dtype == "float32" else pa.float64()
    fields = [
        ("row_id", pa.int64()),
        ("model", pa.string()),
        ("draft", pa.string()),
        ("temperature", pa.float64()),
        ("prompt_id", pa.string()),
        ("position", pa.int64()),
        ("domain", pa.string()),
    ]
    for s in ("p", "q"):
        fields += [(f"{s}_ids", pa.list_(pa.int32())), (f"{s}_probs", pa.list_(f))]
        fields += [(f"{s}_complete", pa.bool_()), (f"{s}_mass", pa.float64())]
    return pa.schema(fields)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _side(name: str, ptr: ArrayLike, ids: ArrayLike, probs: ArrayLike, V: int, dtype: str) -> tuple[Any, ...]:
    """Validated CSR parts of one side: ascending distinct ids in [0, V), probabilities in [0, 1]
    (zeros dropped), stored as ``dtype``; returns (ptr, ids, probs, mass)."""
    ptr_a = np.asarray(ptr)
    ids_a = np.asarray(ids)
    val = np.asarray(probs)
    if ptr_a.dtype.kind not in "iu" or (ptr_a.size and ptr_a.dtype.kind == "u" and ptr_a.max() >= 2**62):
        raise TypeError(f"{name}: ptr must be integers below 2^62, got dtype {ptr_a.dtype}")
    ptr_a = ptr_a.astype(np.int64)
    if ptr_a.ndim != 1 or ptr_a.size < 1 or ptr_a[0] != 0 or (np.diff(ptr_a) < 0).any():
        raise ValueError(f"{name}: ptr must start at 0 and be non-decreasing")
    if ids_a.shape != (int(ptr_a[-1]),) or val.shape != ids_a.shape:
        raise ValueError(f"{name}: ids and probs must hold ptr[-1] = {int(ptr_a[-1])} entries")
    if ids_a.size and ids_a.dtype.kind not in "iu":
        raise TypeError(f"{name}: token ids must be integers, got dtype {ids_a.dtype}")
    if val.size and val.dtype.kind != "f":
        raise TypeError(f"{name}: probabilities must be floats, got dtype {val.dtype}")
    B = ptr_a.size - 1
    row = np.repeat(np.arange(B), np.diff(ptr_a))
    bad = (ids_a >= V) if ids_a.dtype.kind == "u" else (ids_a < 0) | (ids_a >= V)  # before any cast
    ids_a = ids_a.astype(np.int64)
    val = val.astype(dtype)
    if bad.any():
        raise ValueError(f"{name}: row {int(row[np.argmax(bad)])} has a token id outside [0, {V})")
    bad = ~np.isfinite(val) | (val < 0) | (val > 1 + SUM_TOL)
    if bad.any():
        raise ValueError(f"{name}: row {int(row[np.argmax(bad)])} has a probability outside [0, 1] or NaN")
    order = np.lexsort((ids_a, row))
    ids_a, val = ids_a[order], val[order]
    dup = (np.diff(ids_a) == 0) & (np.diff(row) == 0)
    if dup.any():
        raise ValueError(f"{name}: row {int(row[1:][dup][0])} lists token {int(ids_a[1:][dup][0])} twice")
    keep = val > 0
    counts = np.bincount(row[keep], minlength=B)
    new_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    ids_a, val = ids_a[keep], val[keep]
    mass = np.zeros(B)
    np.add.at(mass, row[keep], val.astype(np.float64))
    return new_ptr, ids_a, val, mass


class LogWriter:
    """Writes a log directory: call :meth:`write` with blocks of rows, then :meth:`close` (or use it as
    a context manager). A shard is closed once it holds ``rows_per_shard`` rows or ``entries_per_shard``
    logged entries; each shard goes to a temporary name first and the manifest is written last, so a
    directory with a manifest is always whole; a failed write removes what it wrote and names the file.
    ``resume=True`` continues an unfinished log (a writer killed before its manifest): its closed
    shards are kept (read back and checked), :attr:`resumed_rows` says how many rows they hold, and
    the caller writes the rows after those; on a directory without a log it starts a new one.
    Row ids count up from 0 unless given; given ones must be integers in [0, 2^31) (the range of the
    simulation streams' keys), distinct in the whole log. Ids above every id written are new at no
    cost; to check others, the writer reads back the row ids of the shards whose range they meet
    (and keeps them: 8 bytes per row)."""

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        vocab_size: int,
        *,
        rows_per_shard: int = 100_000,
        entries_per_shard: int = 8_000_000,
        dtype: str = "float32",
        info: Mapping[str, Any] | None = None,
        resume: bool = False,
    ) -> None:
        self._pa = _arrow()
        if (
            isinstance(vocab_size, bool)
            or not isinstance(vocab_size, (int, np.integer))
            or not 1 <= vocab_size <= MAX_V
        ):
            raise ValueError(f"vocab_size: expected an integer in [1, {MAX_V}], got {vocab_size!r}")
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype: expected 'float32' or 'float64', got {dtype!r}")
        for nm, v in (("rows_per_shard", rows_per_shard), ("entries_per_shard", entries_per_shard)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{nm}: expected a positive integer, got {v!r}")
        self.dir = Path(out_dir)
        if not (resume and log_state(self.dir) == "unfinished"):
            check_new_log(self.dir)
        self._made_dir = not self.dir.exists()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.V, self.dtype, self.info = int(vocab_size), dtype, dict(info or {})
        self.rows_per_shard, self.entries_per_shard = rows_per_shard, entries_per_shard
        self._schema = _schema(self._pa, dtype)
        self._shards: list[dict[str, Any]] = []
        self._writer: Any = None
        self._rows = self._entries = 0
        self._groups: dict[tuple[str, float | None, str], int] = {}
        self._next_id = 0
        self._open_ids: list[np.ndarray] = []  # row ids of the open shard, as written
        self._closed_ids: dict[int, np.ndarray] = {}  # sorted row ids of closed shards, read when needed
        self._closed = False
        #: rows already in the log when it was opened with ``resume=True`` (0 otherwise)
        self.resumed_rows = 0
        if resume and log_state(self.dir) == "unfinished":
            self._shards = closed_shards(self.dir, self._schema, _file_sha256)
            self.resumed_rows = sum(s["rows"] for s in self._shards)
            self._next_id = max((s["row_ids"][1] + 1 for s in self._shards), default=0)

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            try:
                self.close()
            except BaseException:
                self.discard()
                raise
        else:
            self.discard()

    def discard(self) -> None:
        """Remove what was written (no manifest: the directory is not a log), after an error."""
        if self._writer is not None:
            try:
                self._writer.close()
            except OSError:
                pass
            self._writer = None
            self._path.unlink(missing_ok=True)
        for s in self._shards:
            (self.dir / s["file"]).unlink(missing_ok=True)
        self._shards = []
        if self._made_dir and self.dir.is_dir() and not any(self.dir.iterdir()):
            self.dir.rmdir()

    def write(
        self,
        p: tuple[ArrayLike, ArrayLike, ArrayLike],
        q: tuple[ArrayLike, ArrayLike, ArrayLike],
        *,
        p_complete: ArrayLike,
        q_complete: ArrayLike,
        meta: Mapping[str, ArrayLike],
    ) -> None:
        """Append rows: ``p`` and ``q`` are CSR parts ``(ptr, ids, probs)`` of the B rows, ``*_complete``
        booleans (B,), ``meta`` arrays (B,) for the metadata columns (model, draft, prompt_id, domain:
        strings, default ""; temperature: default NaN; position: default -1; row_id: default counting)."""
        pp, pi, pv, pm = _side("p", *p, self.V, self.dtype)
        qp, qi, qv, qm = _side("q", *q, self.V, self.dtype)
        B = pp.size - 1
        if qp.size - 1 != B:
            raise ValueError(f"p, q: {B} rows of p and {qp.size - 1} of q")
        cols: dict[str, Any] = {}
        for k in meta:
            if k not in META_COLUMNS:
                raise ValueError(f"meta: unknown column {k!r} (known: {', '.join(META_COLUMNS)})")
        for k in META_COLUMNS:
            cols[k] = self._meta_column(k, meta.get(k), B)
        for s, ptr, mass, comp in (("p", pp, pm, p_complete), ("q", qp, qm, q_complete)):
            c = np.asarray(comp)
            if c.dtype != bool and (c.dtype.kind not in "iu" or not np.isin(c, (0, 1)).all()):
                raise TypeError(f"{s}_complete: expected booleans, got {comp!r:.60}")
            c = np.broadcast_to(c.astype(bool), (B,))
            bad = c & (np.abs(mass - 1.0) > SUM_TOL)
            if bad.any():
                r = int(np.argmax(bad))
                raise ValueError(f"{s}: row {r} is marked complete but its probabilities sum to {mass[r]:.9g}")
            bad = (mass > 1 + SUM_TOL) | (np.diff(ptr) == 0)
            if bad.any():
                r = int(np.argmax(bad))
                raise ValueError(f"{s}: row {r} has logged mass {mass[r]:.9g} (expected in (0, 1])")
            cols[f"{s}_complete"] = c
        if B:  # every check passed: the block's row ids are the log's from now on
            self._next_id = max(self._next_id, int(cols["row_id"].max()) + 1)
        # split the block where the current shard fills up
        start = 0
        while start < B:
            room_rows = self.rows_per_shard - self._rows
            ent = np.diff(pp)[start:] + np.diff(qp)[start:]
            fit = int(np.searchsorted(np.cumsum(ent), self.entries_per_shard - self._entries, side="right"))
            stop = start + max(1 if self._rows == 0 else 0, min(room_rows, fit))
            if stop > start:
                self._append(cols, (pp, pi, pv, pm), (qp, qi, qv, qm), start, stop)
            if stop < B or self._rows >= self.rows_per_shard:
                self._close_shard()
            start = stop

    def _meta_column(self, k: str, v: Any, B: int) -> Any:
        """Metadata column ``k`` of a block, checked: strings, temperatures >= 0 (NaN: unknown),
        positions >= -1 (-1: unknown), row ids (see :meth:`_new_ids`)."""
        if v is None:
            if k == "row_id":
                return np.arange(self._next_id, self._next_id + B, dtype=np.int64)
            return np.full(B, "" if k in _STRINGS else math.nan if k == "temperature" else -1)
        arr = np.asarray(v)
        if arr.shape != (B,):
            raise ValueError(f"meta[{k!r}]: expected {B} values, got shape {arr.shape}")
        if k == "row_id":
            return self._new_ids(arr, B).astype(np.int64)
        if k in _STRINGS:
            return arr.astype(str)
        if k == "temperature":
            if arr.dtype.kind not in "iuf" or (arr.size and not ((arr >= 0) | np.isnan(arr.astype(float))).all()):
                raise ValueError(f"meta['temperature']: expected numbers >= 0 (NaN: unknown), got {v!r:.60}")
            if np.isinf(arr.astype(float)).any():
                raise ValueError("meta['temperature']: expected finite temperatures (NaN: unknown)")
            return arr.astype(np.float64)
        if arr.dtype.kind not in "iu" or (
            arr.size and (arr.max() >= 2**62 or (arr.dtype.kind == "i" and arr.min() < -1))
        ):
            raise ValueError(f"meta['position']: expected integers >= -1 (-1: unknown), got {v!r:.60}")
        return arr.astype(np.int64)

    def _new_ids(self, arr: Any, B: int) -> Any:
        """Row ids given for a block: integers in [0, 2^31), distinct and new to the log."""
        try:
            ids = _row_ids(arr, B)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"meta['row_id']: {str(exc).partition(': ')[2]}") from None
        srt = np.sort(ids)  # type: ignore[arg-type]
        dup = srt[1:][np.diff(srt) == 0]
        if dup.size:
            raise ValueError(f"meta['row_id']: row id {int(dup[0])} given twice (row ids are unique in a log)")
        if not B or int(srt[0]) >= self._next_id:  # above every id written (counting ids): new
            return ids
        for old in self._ids_below(int(srt[0]), int(srt[-1])):
            hit = old[np.minimum(np.searchsorted(old, srt), old.size - 1)] == srt
            if hit.any():
                raise ValueError(f"meta['row_id']: row id {int(srt[hit][0])} was already written to this log")
        return ids

    def _ids_below(self, lo: int, hi: int) -> list[np.ndarray]:
        """Sorted row ids already written that may lie in [lo, hi]: the open shard's, and those of
        the closed shards whose range meets it (read back once, then kept: memory grows with the
        log only for a writer whose ids go back below ones it wrote)."""
        out = [np.sort(np.concatenate(self._open_ids))] if self._open_ids else []
        for i, s in enumerate(self._shards):
            if s["row_ids"][0] <= hi and lo <= s["row_ids"][1]:
                if i not in self._closed_ids:
                    col = self._pa.parquet.read_table(self.dir / s["file"], columns=["row_id"]).column(0)
                    self._closed_ids[i] = np.sort(col.to_numpy())
                out.append(self._closed_ids[i])
        return out

    def _append(self, cols: dict[str, Any], p: tuple[Any, ...], q: tuple[Any, ...], a: int, b: int) -> None:
        pa = self._pa
        data: dict[str, Any] = {k: cols[k][a:b] for k in META_COLUMNS}
        for s, (ptr, ids, val, mass) in (("p", p), ("q", q)):
            off = (ptr[a : b + 1] - ptr[a]).astype(np.int32)
            lo, hi = int(ptr[a]), int(ptr[b])
            data[f"{s}_ids"] = pa.ListArray.from_arrays(off, pa.array(ids[lo:hi].astype(np.int32)))
            data[f"{s}_probs"] = pa.ListArray.from_arrays(off, pa.array(val[lo:hi]))
            data[f"{s}_complete"] = cols[f"{s}_complete"][a:b]
            data[f"{s}_mass"] = mass[a:b]
        table = pa.table(data, schema=self._schema)
        try:
            if self._writer is None:
                self._path = self.dir / f".shard-{len(self._shards):05d}.parquet.tmp"
                self._writer = pa.parquet.ParquetWriter(self._path, self._schema, **_PARQUET_OPTS)
                self._groups = {}
                self._ids = (math.inf, -math.inf)
            self._writer.write_table(table, row_group_size=8192)
        except OSError as exc:  # a full disk, a size limit: name the shard, not pyarrow's handle
            raise not_written(exc, self.dir / f"shard-{len(self._shards):05d}.parquet") from None
        self._rows += b - a
        self._entries += int(p[0][b] - p[0][a] + q[0][b] - q[0][a])
        for key, k in group_counts(table).items():
            self._groups[key] = self._groups.get(key, 0) + k
        rid = cols["row_id"][a:b]
        self._open_ids.append(rid)
        self._ids = (min(self._ids[0], int(rid.min())), max(self._ids[1], int(rid.max())))

    def _close_shard(self) -> None:
        if self._writer is None:
            return
        final = self.dir / f"shard-{len(self._shards):05d}.parquet"
        try:
            self._writer.close()
            self._writer = None
            os.replace(self._path, final)
        except OSError as exc:
            raise not_written(exc, final) from None
        n_rows, n_entries = self._rows, self._entries
        self._open_ids = []
        self._rows = self._entries = 0
        groups = [[d, t, r, c] for (d, t, r), c in sorted(self._groups.items(), key=str)]
        self._shards.append(
            dict(
                file=final.name,
                rows=n_rows,
                entries=n_entries,
                bytes=final.stat().st_size,
                sha256=_file_sha256(final),
                row_ids=[int(self._ids[0]), int(self._ids[1])],
                groups=groups,
            )
        )

    def close(self) -> Path:
        """Finish the last shard and write the manifest (atomically); returns its path."""
        if self._closed:
            return self.dir / MANIFEST
        self._close_shard()
        manifest = dict(
            format=FORMAT,
            format_version=FORMAT_VERSION,
            vocab_size=self.V,
            dtype=self.dtype,
            rows=sum(s["rows"] for s in self._shards),
            shards=self._shards,
            info=self.info,
        )
        atomic_write(self.dir / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
        self._closed = True
        return self.dir / MANIFEST
