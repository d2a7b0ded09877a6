"""Sharded logs of sparse (top-k) next-token distributions: the writer, the manifest and a chunked reader.

A log is a directory: ``manifest.json`` and Parquet shards ``shard-00000.parquet``, ... (docs/guide/logs.md).
Each row is one position scored by a target model p and a draft q: the token ids and probabilities
of each side on its logged support, whether that side is *complete* (the logged entries are the
whole distribution) or *truncated* (a top-k log: the unseen mass is 1 - the logged mass), and the
metadata columns model, draft, temperature, prompt_id, position, domain and a stable ``row_id``.

Reading is chunked: :meth:`Logs.iter_chunks` yields :class:`LogChunk` blocks of at most ``size`` rows,
decoded one Parquet batch at a time, so memory is bounded by the chunk, never by the log. A missing,
damaged or mismatched shard is a ValueError naming the shard. Needs pyarrow (the ``logs`` extra).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.rules import SUM_TOL
from ..inputs.sparse import TopK
from .manifest import (
    _STRINGS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    META_COLUMNS,
    check_shard_columns,
    log_state,
    overlapping,
    read_manifest,
    unfinished,
)
from .writer import LogWriter, _arrow, _file_sha256, _schema

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "META_COLUMNS", "LogChunk", "LogWriter", "Logs", "open_logs"]


@dataclass(frozen=True)
class LogChunk:
    """A block of rows. Side ``s`` ("p" or "q") of row ``r`` has token ids
    ``ids[s][ptr[s][r]:ptr[s][r+1]]`` (ascending, distinct) with probabilities ``probs[s][...]`` (the
    stored dtype, float32 by default); ``complete[s][r]`` says whether they are the whole distribution
    and ``mass[s][r]`` is their sum as written. ``meta`` holds the metadata columns as arrays."""

    vocab_size: int
    shard: str
    meta: dict[str, NDArray[Any]]
    ptr: dict[str, NDArray[np.int64]]
    ids: dict[str, NDArray[np.int64]]
    probs: dict[str, NDArray[np.floating[Any]]]
    complete: dict[str, NDArray[np.bool_]]
    mass: dict[str, NDArray[np.float64]]

    def __len__(self) -> int:
        return int(self.meta["row_id"].shape[0])

    @property
    def row_id(self) -> NDArray[np.int64]:
        return self.meta["row_id"]

    @property
    def is_complete(self) -> NDArray[np.bool_]:
        """Rows whose p and q are both complete (exact alpha*); the others need intervals."""
        return self.complete["p"] & self.complete["q"]

    def topk(self, side: str) -> TopK:
        """Side "p" or "q" as a :class:`TopK` padded with id -1 (what the kernels and
        ``acceptance_bounds`` take); values stay in the stored dtype."""
        ptr, ids, val = self.ptr[side], self.ids[side], self.probs[side]
        counts = np.diff(ptr)
        k = max(1, int(counts.max()) if counts.size else 1)
        row = np.repeat(np.arange(counts.size), counts)
        col = np.arange(ids.size) - ptr[:-1][row]
        pid = np.full((counts.size, k), -1, dtype=np.int64)
        pv = np.zeros((counts.size, k), dtype=val.dtype)
        pid[row, col] = ids
        pv[row, col] = val
        return TopK(pid, pv, self.vocab_size)

    def take(self, rows: NDArray[Any]) -> LogChunk:
        """The rows ``rows`` (a boolean mask or indices), in that order."""
        idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, dtype=np.int64)
        ptr, ids, probs = {}, {}, {}
        for s in ("p", "q"):
            counts = np.diff(self.ptr[s])[idx]
            ptr[s] = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
            starts = np.repeat(self.ptr[s][:-1][idx] - ptr[s][:-1], counts)
            flat = np.arange(int(ptr[s][-1])) + starts
            ids[s], probs[s] = self.ids[s][flat], self.probs[s][flat]
        return LogChunk(
            self.vocab_size,
            self.shard,
            {k: v[idx] for k, v in self.meta.items()},
            ptr,
            ids,
            probs,
            {s: self.complete[s][idx] for s in ("p", "q")},
            {s: self.mass[s][idx] for s in ("p", "q")},
        )


def _match(values: NDArray[Any], wanted: Any, numeric: bool = False) -> NDArray[np.bool_]:
    w = [wanted] if isinstance(wanted, (str, int, float)) else list(wanted)
    if numeric:
        try:
            ref = np.asarray(w, dtype=np.float64)[None, :]
        except (TypeError, ValueError):
            raise ValueError(f"temperature: expected a number or a list of numbers, got {wanted!r}") from None
        return np.asarray(np.isclose(values[:, None], ref, rtol=0, atol=1e-9, equal_nan=True).any(axis=1))
    return np.asarray(np.isin(values, np.asarray(w, dtype=str)), dtype=bool)


class Logs:
    """An opened log directory (see :func:`open_logs`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).resolve()
        mf = self.path / MANIFEST
        if not self.path.is_dir():
            raise FileNotFoundError(f"{self.path}: no such log directory")
        if log_state(self.path) == "unfinished":
            raise ValueError(unfinished(self.path))
        if not mf.is_file():
            raise ValueError(f"{self.path}: not a log directory (no {MANIFEST}; write one with mdsd-fast convert)")
        m = read_manifest(mf)
        self.vocab_size: int = m["vocab_size"]
        self.shards: list[dict[str, Any]] = m["shards"]
        self.rows: int = m["rows"]
        self.info: dict[str, Any] = m["info"]
        self._pa = _arrow()
        self._expected = _schema(self._pa, m["dtype"])
        self._checked: dict[int, NDArray[np.int64]] = {}  # shard -> its sorted row ids if ranges overlap
        self._checking: set[int] = set()

    def __len__(self) -> int:
        return self.rows

    def __repr__(self) -> str:
        return f"Logs({self.path}, {self.rows} rows in {len(self.shards)} shards, V={self.vocab_size})"

    def _open(self, i: int) -> Any:
        """The ParquetFile of shard ``i``, checked against the manifest (exists, size, rows, schema)."""
        s = self.shards[i]
        f = self.path / s["file"]
        if not f.is_file():
            raise ValueError(f"{f}: shard missing (listed in {MANIFEST})")
        if f.stat().st_size != s["bytes"]:
            raise ValueError(
                f"{f}: shard has {f.stat().st_size} bytes, the manifest says {s['bytes']} (replaced or cut?)"
            )
        try:
            pf = self._pa.parquet.ParquetFile(f, page_checksum_verification=True)
        except Exception as exc:
            raise ValueError(f"{f}: damaged shard ({type(exc).__name__}: {exc})") from None
        if pf.metadata.num_rows != s["rows"] or not pf.schema_arrow.equals(self._expected):
            raise ValueError(f"{f}: shard does not match the manifest (rows or columns differ)")
        if i not in self._checked and i not in self._checking:
            self._checking.add(i)
            try:
                self._check(i, pf, f)
            finally:
                self._checking.discard(i)
        return pf

    def _check(self, i: int, pf: Any, f: Path) -> None:
        """Shard ``i``'s metadata columns against the manifest (groups, counts, row ids), and its
        row ids against the other shards' where the manifest's ranges meet."""
        try:
            cols = pf.read(columns=["row_id", "domain", "temperature", "draft"])
        except OSError as exc:
            raise ValueError(f"{f}: damaged shard ({type(exc).__name__}: {exc})") from None
        rid = check_shard_columns(str(f), self.shards[i], cols)
        others = overlapping(self.shards, self.shards[i])
        for j in others:
            other = self._checked.get(j)
            if other is None:
                if j in self._checking:
                    continue  # shard j is checking against this one right now
                self._open(j)
                other = self._checked[j]
            hit = other[np.minimum(np.searchsorted(other, rid), other.size - 1)] == rid
            if hit.any():
                raise ValueError(
                    f"{f}: shard does not match the manifest (row id {int(rid[hit][0])} is also in "
                    f"{self.shards[j]['file']}; row ids are unique in a log)"
                )
        self._checked[i] = rid if others else rid[:0]  # kept only where another shard may need them

    def verify(self) -> None:
        """Check every shard's sha256 against the manifest (reads every byte once)."""
        for s in self.shards:
            self._open(self.shards.index(s))
            if _file_sha256(self.path / s["file"]) != s["sha256"]:
                raise ValueError(f"{self.path / s['file']}: shard content differs from the manifest's sha256")

    def iter_chunks(
        self,
        size: int = 4096,
        *,
        shards: list[int] | None = None,
        domain: Any = None,
        draft: Any = None,
        temperature: Any = None,
        limit: int | None = None,
    ) -> Iterator[LogChunk]:
        """Chunks of at most ``size`` rows, in storage order, of the given shards (default all) and
        matching the filters (each a value or a list); ``limit``: stop after that many rows."""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size: expected a positive integer, got {size!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
            raise ValueError(f"limit: expected an integer >= 0 (rows to read) or None, got {limit!r}")
        left = math.inf if limit is None else int(limit)
        for i in self._shard_list(shards):
            pf = self._open(i)
            name = str(self.path / self.shards[i]["file"])
            try:
                for batch in pf.iter_batches(batch_size=size):
                    if left <= 0:
                        return
                    chunk = self._chunk(batch, name)
                    keep = np.ones(len(chunk), dtype=bool)
                    for col, want in (("domain", domain), ("draft", draft)):
                        if want is not None:
                            keep &= _match(chunk.meta[col], want)
                    if temperature is not None:
                        keep &= _match(chunk.meta["temperature"], temperature, numeric=True)
                    if left < keep.sum():
                        keep &= np.cumsum(keep) <= left
                    if not keep.all():
                        chunk = chunk.take(keep)
                    left -= len(chunk)
                    if len(chunk):
                        yield chunk
            except OSError as exc:  # pyarrow's decoding errors (checksums, truncation) are OSErrors
                raise ValueError(f"{name}: damaged shard ({type(exc).__name__}: {exc})") from None

    def _shard_list(self, shards: Any) -> list[int]:
        if shards is None:
            return list(range(len(self.shards)))
        if isinstance(shards, (str, bytes)) or not hasattr(shards, "__iter__"):
            raise TypeError(f"shards: expected a list of shard indices, got {shards!r}")
        out = []
        for i in shards:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
                raise TypeError(f"shards: expected integer shard indices, got {i!r}")
            if not 0 <= i < len(self.shards):
                raise ValueError(f"shards: no shard {i} (the log has {len(self.shards)}: 0 to {len(self.shards) - 1})")
            out.append(int(i))
        return out

    def _chunk(self, batch: Any, name: str) -> LogChunk:
        meta = {k: batch.column(k).to_numpy(zero_copy_only=False) for k in META_COLUMNS}
        for k in _STRINGS:
            meta[k] = meta[k].astype(str)
        ptr, ids, probs, comp, mass = {}, {}, {}, {}, {}
        for s in ("p", "q"):
            li, lv = batch.column(f"{s}_ids"), batch.column(f"{s}_probs")
            off = li.offsets.to_numpy().astype(np.int64)
            ptr[s] = off - off[0]
            ids[s] = li.values.to_numpy()[off[0] : off[-1]].astype(np.int64)
            vo = lv.offsets.to_numpy().astype(np.int64)
            probs[s] = lv.values.to_numpy()[vo[0] : vo[-1]]
            comp[s] = batch.column(f"{s}_complete").to_numpy(zero_copy_only=False).astype(bool)
            mass[s] = batch.column(f"{s}_mass").to_numpy()
            if not np.array_equal(vo - vo[0], ptr[s]):
                raise ValueError(f"{name}: damaged shard ({s} ids and probabilities do not line up)")
            _check_side(name, s, ptr[s], ids[s], probs[s], comp[s], self.vocab_size)
        return LogChunk(self.vocab_size, name, meta, ptr, ids, probs, comp, mass)


def _check_side(
    name: str,
    s: str,
    ptr: NDArray[np.int64],
    ids: NDArray[np.int64],
    val: NDArray[Any],
    comp: NDArray[np.bool_],
    V: int,
) -> None:
    """What the writer guarantees of a side, checked on every chunk read: ids in [0, V), ascending
    and distinct within a row, probabilities finite in [0, 1], a complete row summing to 1 and a
    truncated one to at most 1 (within SUM_TOL)."""
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        raise ValueError(f"{name}: damaged shard (a {s} token id outside [0, {V}))")
    step = np.diff(ids) <= 0
    step[ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < ids.size)] - 1] = False  # a new row may start lower
    if step.any():
        raise ValueError(f"{name}: damaged shard ({s} token ids not ascending and distinct within a row)")
    if val.size and not (np.isfinite(val).all() and val.min() >= 0 and val.max() <= 1 + SUM_TOL):
        raise ValueError(f"{name}: damaged shard (a {s} probability outside [0, 1] or NaN)")
    counts = np.diff(ptr)
    mass = np.zeros(counts.size)
    if val.size:  # an empty row's reduceat value is some entry's: it is refused below anyway
        mass = np.add.reduceat(val, np.minimum(ptr[:-1], val.size - 1), dtype=np.float64)
    bad = np.where(comp, np.abs(mass - 1.0) > SUM_TOL, (mass > 1.0 + SUM_TOL) | (counts == 0))
    if bad.any():
        r = int(np.argmax(bad))
        raise ValueError(
            f"{name}: damaged shard (a {s} row logs mass {mass[r]:.9g}, marked complete = {bool(comp[r])})"
        )


def open_logs(path: str | os.PathLike[str]) -> Logs:
    """Open a log directory (``manifest.json`` + Parquet shards) for chunked reading."""
    return Logs(path)
