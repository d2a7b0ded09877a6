"""The log manifest: its constants, its validation, and the checks of each shard against it.

Nothing read from a log is trusted. :func:`read_manifest` checks every field of ``manifest.json``
(types, ranges, plain shard file names, each shard's groups summing to its rows, the total row
count summing the shards'); :func:`check_shard_columns` checks a shard's metadata columns against
its manifest entry (the (domain, temperature, draft) groups and their counts, the row id range,
row ids distinct). A directory holding the writer's files but no manifest is an *unfinished* log
(a conversion was killed): :func:`log_state` says so, and :func:`check_new_log` and the reader
name it the same way, with what to do.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..inputs.args import _row_ids
from ..inputs.rules import MAX_V

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "META_COLUMNS", "check_new_log", "log_state", "read_manifest"]

FORMAT = "mdsd_fast.logs"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
#: Metadata columns of every row (row_id keys the random streams of simulated estimates).
META_COLUMNS = ("row_id", "model", "draft", "temperature", "prompt_id", "position", "domain")
_STRINGS = ("model", "draft", "prompt_id", "domain")
#: The files a writer leaves in its directory: closed shards, an open shard, a manifest being written.
_WRITER_FILES = ("shard-*.parquet", ".shard-*.parquet.tmp", f".tmp-{MANIFEST}-*")
_SHARD_NAME = re.compile(r"shard-\d{5,}\.parquet")

GroupKey = tuple[str, "float | None", str]


def log_state(out_dir: str | os.PathLike[str]) -> str:
    """ "log" (a manifest), "unfinished" (the writer's files without a manifest) or "none"."""
    d = Path(out_dir)
    if (d / MANIFEST).exists():
        return "log"
    if d.is_dir() and any(next(d.glob(g), None) is not None for g in _WRITER_FILES):
        return "unfinished"
    return "none"


def unfinished(out_dir: str | os.PathLike[str]) -> str:
    """The one line naming an unfinished log, said by both the writer and the reader."""
    return (
        f"{out_dir}: an unfinished log (its conversion stopped before writing {MANIFEST}); "
        "continue it with `mdsd-fast convert ... --resume` (the same input and options), "
        "or remove this directory and convert again"
    )


def closed_shards(out_dir: Path, schema: Any, sha256: Any) -> list[dict[str, Any]]:
    """The manifest entries of an unfinished log's closed shards, read back from the files (every
    page of their ids checked); the writer's temporary files are removed. A ValueError if a shard
    is missing, damaged or of another schema: such a log cannot be continued."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for g in _WRITER_FILES[1:]:
        for f in out_dir.glob(g):
            f.unlink()
    files = sorted(out_dir.glob(_WRITER_FILES[0]))
    entries = []
    for i, f in enumerate(files):
        again = f"remove {out_dir} and convert again"
        if f.name != f"shard-{i:05d}.parquet":
            raise ValueError(f"{out_dir / f'shard-{i:05d}.parquet'}: missing from the unfinished log; {again}")
        try:
            pf = pq.ParquetFile(f, page_checksum_verification=True)
            cols = ["row_id", "domain", "temperature", "draft", "p_ids", "q_ids"]
            table = pf.read(columns=cols) if pf.schema_arrow.equals(schema) else None
        except OSError as exc:
            raise ValueError(f"{f}: damaged shard ({type(exc).__name__}: {exc}); {again}") from None
        if table is None:
            raise ValueError(f"{f}: written with other options (columns or dtype differ); {again}")
        ids = table.column("row_id").to_numpy()
        groups = group_counts(table)
        n = sum(int(pc.sum(pc.list_value_length(table.column(c))).as_py() or 0) for c in ("p_ids", "q_ids"))
        entries.append(
            dict(
                file=f.name,
                rows=table.num_rows,
                entries=n,
                bytes=f.stat().st_size,
                sha256=sha256(f),
                row_ids=[int(ids.min()), int(ids.max())],
                groups=[[d, t, r, c] for (d, t, r), c in sorted(groups.items(), key=str)],
            )
        )
    return entries


def check_new_log(out_dir: str | os.PathLike[str]) -> None:
    """Refuse a directory that already holds a log, whole or unfinished (before any work is done)."""
    d = Path(out_dir)
    if d.exists() and not d.is_dir():
        raise ValueError(f"{d}: exists and is not a directory")
    state = log_state(d)
    if state == "log":
        raise ValueError(f"{d}: already holds a log; write to a new directory")
    if state == "unfinished":
        raise ValueError(unfinished(d))


def group_counts(table: Any) -> dict[GroupKey, int]:
    """Rows per (domain, temperature or None for NaN, draft) of an Arrow table: the manifest's ``groups``."""
    g = table.group_by(["domain", "temperature", "draft"]).aggregate([([], "count_all")])
    out: dict[GroupKey, int] = {}
    for d, t, r, k in zip(
        *(g.column(c).to_pylist() for c in ("domain", "temperature", "draft", "count_all")), strict=True
    ):
        key = (d, None if t is None or math.isnan(t) else t, r)  # NaNs of any payload are one group
        out[key] = out.get(key, 0) + k
    return out


def _int(v: Any, what: str, lo: int = 0, hi: float = math.inf) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{what}: expected an integer in [{lo}, {hi}], got {v!r}")
    return v


def _groups(raw: Any, what: str) -> dict[GroupKey, int]:
    if not isinstance(raw, list):
        raise ValueError(f"{what}: groups must be a list")
    out: dict[GroupKey, int] = {}
    for g in raw:
        ok = isinstance(g, list) and len(g) == 4 and isinstance(g[0], str) and isinstance(g[2], str)
        t = g[1] if ok else None
        if not ok or not (t is None or (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t))):
            raise ValueError(f"{what}: a group must be [domain, temperature or null, draft, rows], got {g!r}")
        key = (g[0], None if t is None else float(t), g[2])
        if key in out:
            raise ValueError(f"{what}: group {key} listed twice")
        out[key] = _int(g[3], f"{what}: rows of group {key}")
    return out


def read_manifest(mf: Path) -> dict[str, Any]:
    """The manifest at ``mf``, every field checked; a ValueError naming the file and the field otherwise."""
    try:
        m = json.loads(mf.read_bytes().decode("utf-8"))
        if not isinstance(m, dict):
            raise ValueError("expected a JSON object")
        if m.get("format") != FORMAT:
            raise ValueError(f"format field {m.get('format')!r}, expected {FORMAT!r}")
        if _int(m.get("format_version"), "format_version", 1) > FORMAT_VERSION:
            raise ValueError(f"format version {m['format_version']} is newer than this mdsd_fast ({FORMAT_VERSION})")
        _int(m.get("vocab_size"), "vocab_size", 1, MAX_V)
        m.setdefault("dtype", "float32")
        if m["dtype"] not in ("float32", "float64"):
            raise ValueError(f"dtype: expected 'float32' or 'float64', got {m['dtype']!r}")
        if not isinstance(m.setdefault("info", {}), dict):
            raise ValueError("info: expected an object")
        if not isinstance(m.get("shards"), list):
            raise ValueError("shards: expected a list")
        files = set()
        for i, s in enumerate(m["shards"]):
            if not isinstance(s, dict) or not isinstance(s.get("file"), str) or not _SHARD_NAME.fullmatch(s["file"]):
                raise ValueError(f"shards[{i}]: expected a 'file' named shard-NNNNN.parquet in the log directory")
            what = s["file"]
            if what in files:
                raise ValueError(f"{what}: listed twice")
            files.add(what)
            rows = _int(s.get("rows"), f"{what}: rows")
            _int(s.get("bytes"), f"{what}: bytes")
            if not isinstance(s.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", s["sha256"]):
                raise ValueError(f"{what}: sha256 must be 64 hex digits")
            s["_groups"] = _groups(s.get("groups"), what)
            if sum(s["_groups"].values()) != rows:
                raise ValueError(f"{what}: its groups hold {sum(s['_groups'].values())} rows, its rows field {rows}")
            ids = s.get("row_ids")
            if not isinstance(ids, list) or len(ids) != 2:
                raise ValueError(f"{what}: row_ids must be [lowest, highest]")
            lo, hi = (_int(x, f"{what}: row_ids", 0, 2**31 - 1) for x in ids)
            if rows and hi - lo + 1 < rows:
                raise ValueError(f"{what}: {rows} distinct row ids cannot lie in [{lo}, {hi}]")
        total = sum(s["rows"] for s in m["shards"])
        if _int(m.get("rows"), "rows") != total:
            raise ValueError(f"rows: the manifest says {m['rows']}, its shards hold {total}")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ValueError(f"{mf}: damaged manifest ({type(exc).__name__}: {exc})") from None
    return m


def check_shard_columns(name: str, entry: dict[str, Any], table: Any) -> NDArray[np.int64]:
    """Check a shard's metadata columns (an Arrow table of ``row_id``, ``domain``, ``temperature``,
    ``draft``) against its manifest entry; returns its row ids, sorted."""
    bad = f"{name}: shard does not match the manifest"
    try:
        ids = table.column("row_id").to_numpy()
        rid = np.sort(_row_ids(ids, ids.size))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{bad} (row_id column: {str(exc).partition(': ')[2]})") from None
    dup = np.flatnonzero(np.diff(rid) == 0)
    if dup.size:
        raise ValueError(f"{bad} (row id {int(rid[dup[0]])} appears twice)")
    if rid.size and [int(rid[0]), int(rid[-1])] != list(entry["row_ids"]):
        raise ValueError(f"{bad} (row ids span [{rid[0]}, {rid[-1]}], the manifest says {entry['row_ids']})")
    got = group_counts(table)
    want: dict[GroupKey, int] = entry["_groups"]
    for key in sorted(set(got) | set(want), key=str):
        if got.get(key, 0) != want.get(key, 0):
            d, t, r = key
            raise ValueError(
                f"{bad} (group domain {d!r}, temperature {t}, draft {r!r}: the shard holds {got.get(key, 0)} rows, "
                f"the manifest says {want.get(key, 0)})"
            )
    return rid


def overlapping(shards: Iterable[dict[str, Any]], entry: dict[str, Any]) -> list[int]:
    """Indices of the other shards whose manifest row id range meets ``entry``'s."""
    lo, hi = entry["row_ids"]
    return [
        j
        for j, s in enumerate(shards)
        if s is not entry and s["rows"] and entry["rows"] and s["row_ids"][0] <= hi and lo <= s["row_ids"][1]
    ]
