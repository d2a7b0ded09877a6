"""The gap report streamed over a sharded log (mdsd_fast.logs), in memory bounded by a chunk.

Work is split into units of one (shard, domain, temperature, draft) each, run here, in local
processes or on Dask by the report's scheduler (report._run_units). A unit reads its shard in chunks
of ``chunk_rows`` rows, never a dense group: complete rows (p and q both whole) go through the same
per-position computation as the report (report.position_values: exact alpha* and exact verifier
acceptance, on each row's union support), truncated rows through ``acceptance_bounds`` (an interval
per position, in sub-batches of ``BOUNDS_ROWS``: its compressed groups are >= 2,048 columns wide). A unit writes its
per-position values to ``<out>/shards/`` atomically with a resume key (the shard's sha256 from the
manifest, the selection, the config, the code); the records come from per-unit exact moments and
the dense report's findings from exact mergeable per-unit summaries (mdsd_fast.report.merge, mdsd_fast.report.findings).
No value depends on the chunk size, the unit order or the number of workers: every row is computed
on its own union support, and simulated streams are keyed by the row's ``row_id``. Every kernel and
validation pass of a unit runs on ``config.threads`` (None: all cores).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._files import atomic_write
from .._version import __version__
from ..inputs.pairs import union_pair
from ..inputs.rules import check_threads
from ..intervals.bounds import _VERIFIER_SCHEMES as _INTERVAL_VERIFIERS
from ..intervals.bounds import acceptance_bounds
from ..logs.manifest import log_state, unfinished
from ..logs.reader import MANIFEST, LogChunk, Logs, open_logs
from .config import compute_modules
from .gap import (
    GapReport,
    ReportConfig,
    _code_digest,
    _file_digest,
    _run_units,
    _unit_seed,
    _units_to_redo,
    position_values,
)
from .log_summary import _summarise, interval_markdown
from .scheduler import check_scheduler

__all__ = ["LogUnit", "log_report", "is_log_dir", "interval_markdown", "BOUNDS_ROWS", "CHUNK_ROWS"]

#: Rows per chunk read from a shard (memory: a chunk's logged entries and its union-support arrays).
CHUNK_ROWS = 4096
#: Entries of a batch's (rows, union support) arrays: top-20 rows run 4,096 at a time, full-vocabulary
#: rows (the flat dataset's, up to V = 49,152 entries) ~40 at a time (8 MB per float64 array).
CELLS = 1 << 20
#: Truncated rows per acceptance_bounds call: it holds a few (rows, >= 2,048) float64 arrays.
BOUNDS_ROWS = 16


def is_log_dir(path: Any) -> bool:
    """A directory holding a log manifest (what ``--dataset DIR`` streams), or the files of an
    unfinished one (then :func:`log_report` says so, as ``convert`` does)."""
    return path is not None and log_state(path) != "none"


@dataclass(frozen=True)
class LogUnit:
    """One shard's rows of one (domain, temperature, draft) group, at most ``limit`` of them."""

    path: str  #: absolute path of the log directory
    shard: int
    sha256: str  #: the shard's content hash, from the manifest
    domain: str
    temperature: float | None
    draft: str
    limit: int | None = None
    chunk_rows: int = CHUNK_ROWS  #: not part of the key: results do not depend on it

    @property
    def shard_name(self) -> str:
        t = "nan" if self.temperature is None else f"{self.temperature:g}"
        sel = f"{self.path}|{self.shard}|{self.domain}|{t}|{self.draft}"
        name = f"log{self.shard:05d}__{self.domain}__T{t}__{self.draft}".replace("/", "_").replace(" ", "_")
        return f"{name}__{hashlib.sha256(sel.encode()).hexdigest()[:8]}"

    def label(self) -> str:
        t = "" if self.temperature is None else f" T={self.temperature:g}"
        return f"shard {self.shard}: {self.draft}{t} {self.domain}"

    def resume_key(self, cfg: ReportConfig) -> dict[str, str]:
        sel = json.dumps([self.sha256, self.domain, self.temperature, self.draft, self.limit])
        return dict(data=hashlib.sha256(sel.encode()).hexdigest()[:32], config=cfg.fingerprint(), code=_log_code())


@functools.lru_cache(maxsize=1)
def _log_code() -> str:
    """The report's code digest and this module's and the log reader's bytes."""
    parts = [_code_digest()] + [_file_digest(f) for _, f in compute_modules(("logs", "intervals"))]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=4)
def _open(path: str, mtime_ns: int) -> Logs:
    return open_logs(path)


def _logs(path: str) -> Logs:
    return _open(path, os.stat(Path(path) / MANIFEST).st_mtime_ns)


def _any(x: Any) -> Any:
    """acceptance_bounds takes TopK rows; its signature says ArrayLike."""
    return x


def _bounds(chunk: LogChunk, cfg: ReportConfig) -> dict[str, NDArray[np.float64]]:
    """Per-position intervals of alpha* and of the verifiers that have one, on truncated rows."""
    out: dict[str, NDArray[np.float64]] = {}
    B = len(chunk)
    runs: list[tuple[str | None, str, int]] = [(None, s, n) for s, n in cfg.pairs()]
    runs += [(v, s, n) for v, s, n in cfg.verifier_runs() if v in _INTERVAL_VERIFIERS and v != "sd"]
    qlogged = np.diff(chunk.ptr["q"])
    for v, s, n in runs:
        lo, hi = np.full(B, np.nan), np.full(B, np.nan)
        allowed = _INTERVAL_VERIFIERS.get(v or "", ())
        if not allowed or s in allowed:
            need = 1 if s == "iid" else n  # "wor" and the deterministic schemes draw n distinct tokens
            for a in range(0, B, BOUNDS_ROWS):
                rows = np.arange(a, min(a + BOUNDS_ROWS, B))
                rows = rows[qlogged[rows] >= need]
                for r in [rows] if rows.size else []:
                    sub = chunk.take(r)
                    try:
                        lo[r], hi[r] = acceptance_bounds(
                            _any(sub.topk("p")), _any(sub.topk("q")), n, s, verifier=v, threads=cfg.threads
                        )
                    except ValueError:  # e.g. a tie at q's top-m cutoff: no interval for that row
                        for i in r:
                            one = chunk.take(np.array([i]))
                            try:
                                lo[i], hi[i] = (
                                    x[0]
                                    for x in acceptance_bounds(
                                        _any(one.topk("p")), _any(one.topk("q")), n, s, verifier=v, threads=cfg.threads
                                    )
                                )
                            except ValueError:
                                pass
        key = f"alpha/{s}/{n}" if v is None else f"verifier/{v}/{s}/{n}"
        out[f"interval/{key}/low"], out[f"interval/{key}/high"] = lo, hi
    return out


def compute_log_unit(unit: LogUnit, cfg: ReportConfig, out_dir: str) -> str:
    """Compute one unit chunk by chunk and write its per-position values atomically; returns the path."""
    logs = _logs(unit.path)
    rng_seed = _unit_seed(cfg.seed, unit.sha256)
    parts: list[dict[str, NDArray[Any]]] = []
    temp = math.nan if unit.temperature is None else unit.temperature
    for chunk in logs.iter_chunks(
        unit.chunk_rows,
        shards=[unit.shard],
        domain=unit.domain,
        draft=unit.draft,
        temperature=temp,
        limit=unit.limit,
    ):
        comp = chunk.is_complete
        vals: dict[str, NDArray[Any]] = {"rows": chunk.row_id, "complete": comp}
        where = np.flatnonzero(comp)
        for idx in _batches(np.diff(chunk.ptr["p"])[where] + np.diff(chunk.ptr["q"])[where], CELLS):
            c = chunk.take(where[idx])
            pc, qc, _, _ = union_pair(c.topk("p"), c.topk("q"), threads=check_threads(cfg.threads))
            for k, a in position_values(pc, qc, cfg, rng_seed, c.row_id, per_row=True).items():
                if k not in vals:
                    vals[k] = np.full(len(chunk), np.nan) if a.dtype.kind == "f" else np.zeros(len(chunk), dtype=bool)
                vals[k][where[idx]] = a
        if not comp.all():
            t = chunk.take(~comp)
            for k, a in _bounds(t, cfg).items():
                full = np.full(len(chunk), np.nan)
                full[~comp] = a
                vals[k] = full
        parts.append(vals)
    keys = sorted({k for d in parts for k in d})
    arrays = {k: np.concatenate([d[k] if k in d else _missing(k, len(d["rows"])) for d in parts]) for k in keys}
    meta = dict(unit=unit.__dict__, version=__version__, resume_key=unit.resume_key(cfg))
    path = Path(out_dir) / "shards" / f"{unit.shard_name}.npz"
    shard: dict[str, Any] = dict(arrays, __meta__=np.array(json.dumps(meta)))
    atomic_write(path, lambda fh: np.savez(fh, **shard))
    return str(path)


def _batches(widths: NDArray[np.int64], cells: int) -> list[NDArray[np.int64]]:
    """Consecutive runs of rows whose padded (rows, widest row) arrays stay within ``cells`` entries
    (one row at least): the union-support arrays of a run are then bounded whatever the rows hold."""
    out, start, widest = [], 0, 0
    for i, w in enumerate(widths.tolist()):
        if i > start and (i - start + 1) * max(widest, w) > cells:
            out.append(np.arange(start, i))
            start, widest = i, 0
        widest = max(widest, w)
    if start < widths.size:
        out.append(np.arange(start, widths.size))
    return out


def _missing(key: str, size: int) -> NDArray[Any]:
    return np.zeros(size, dtype=bool) if key.endswith("/exact") else np.full(size, np.nan)


def plan_log_units(logs: Logs, cfg: ReportConfig, *, domain: Any, draft: Any, limit: int | None) -> list[LogUnit]:
    """Every (shard, group) with rows that pass the filters; ``limit``: the first that many such rows
    of the log in storage order (found by reading the metadata columns only)."""
    want = dict(domain=domain, draft=draft, temperature=cfg.temperatures)
    units: list[LogUnit] = []
    left = math.inf if limit is None else limit
    for i, s in enumerate(logs.shards):
        logs._open(i)  # every shard checked now (exists, size, footer, columns): a bad one fails fast
        if left <= 0:
            continue
        groups = []
        for d, t, r, count in s["groups"]:
            if domain is not None and d not in domain or draft is not None and r not in draft:
                continue
            if cfg.temperatures is not None and (t is None or not any(abs(t - x) < 1e-9 for x in cfg.temperatures)):
                continue
            groups.append((d, t, r, count))
        if not groups:
            continue
        taken: dict[tuple[Any, ...], int] = {}
        if left < sum(g[3] for g in groups):
            meta = logs._open(i).read(columns=["domain", "temperature", "draft"]).to_pydict()
            for d, t, r in zip(meta["domain"], meta["temperature"], meta["draft"], strict=True):
                key = next((g for g in groups if g[0] == d and g[2] == r and _same_t(g[1], t)), None)
                if key is not None and left > 0:
                    taken[key] = taken.get(key, 0) + 1
                    left -= 1
        else:
            taken = {g: g[3] for g in groups}
            left -= sum(taken.values())
        for g, k in taken.items():
            lim = None if k == g[3] else k
            units.append(LogUnit(str(logs.path), i, s["sha256"], g[0], g[1], g[2], lim))
    if not units:
        raise ValueError(f"dataset: no positions of {logs.path} pass the filters ({_describe(want)})")
    return units


def _same_t(a: float | None, b: float) -> bool:
    return (a is None and math.isnan(b)) or (a is not None and abs(a - b) < 1e-9)


def _describe(want: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in want.items() if v is not None) or "none given"


def log_report(
    path: str | os.PathLike[str],
    *,
    config: ReportConfig | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool | None = None,
    domain: Any = None,
    draft: Any = None,
    limit: int | None = None,
    chunk_rows: int = CHUNK_ROWS,
    command: str | None = None,
) -> GapReport:
    """The gap report over a log directory (see the module docstring). ``domain`` / ``draft``: keep
    those (a value or a list); temperatures are filtered by ``config.temperatures``; ``limit``: the
    first that many positions. Records are the report's (exact, over complete rows) plus ``kind``
    "interval" records (mean low and high end over truncated rows); returns a GapReport.
    ``config.threads``: C++ threads per unit, validation included (as in ``gap_report``)."""
    cfg = config or ReportConfig()
    t0 = time.perf_counter()
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit: expected a positive integer, got {limit!r}")
    domain = [domain] if isinstance(domain, str) else domain
    draft = [draft] if isinstance(draft, str) else draft
    if log_state(path) == "unfinished":  # named as the user gave it, as `convert` names it
        raise ValueError(unfinished(path))
    logs = open_logs(os.path.abspath(path))  # absolute: the units go to workers in other directories
    if scheduler:
        check_scheduler(scheduler)
    units = [
        LogUnit(u.path, u.shard, u.sha256, u.domain, u.temperature, u.draft, u.limit, chunk_rows)
        for u in plan_log_units(logs, cfg, domain=domain, draft=draft, limit=limit)
    ]
    holder = tempfile.TemporaryDirectory(prefix="mdsd-logs-") if out_dir is None else None
    out = os.path.abspath(holder.name if holder else str(out_dir))
    todo = units
    if resume:  # as the dense report: reuse a unit whose key matches, say why the others are redone
        todo, _ = _units_to_redo(units, out, lambda u: u.resume_key(cfg))
    _run_units(todo, cfg, out, workers=workers, scheduler=scheduler, progress=progress, compute=compute_log_unit)
    records, findings, counts = _summarise(units, cfg, out)
    metadata = dict(
        mdsd_fast=__version__,
        dataset=[str(logs.path)],
        config=dict(cfg.__dict__),
        units=len(units),
        units_computed=len(todo),
        units_reused=len(units) - len(todo),
        positions=counts,
        filters=dict(domain=domain, draft=draft, temperatures=cfg.temperatures, limit=limit),
        command=command or "",
        seconds=round(time.perf_counter() - t0, 3),
        confidence="95% normal interval over complete positions; intervals: mean ends over truncated positions",
    )
    if holder is not None:
        holder.cleanup()
    return GapReport(records=records, findings=findings, metadata=metadata)
