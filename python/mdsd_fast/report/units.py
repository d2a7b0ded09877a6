"""The gap report's unit computation, its shards and resume, and where units run.

Every unit writes its per-position values to ``<out>/shards/<name>.npz`` atomically, with its
resume key in the metadata; ``resume`` reuses a shard only when its stored key equals this run's.
Units run in this process, in local processes (``workers``) or on a Dask cluster (``scheduler``)
and give identical numbers either way: each unit's randomness is keyed by (seed, unit key) only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .._files import atomic_write
from .._version import __version__
from ..bound.lp import TooLargeError
from ..data import MAX_TRUNCATION
from ..inputs.pairs import as_pair
from ..inputs.rules import check_threads, mixed_parts, scheme_family
from ..intervals.truncation import sample_bounds
from ..verifiers.run import VerifierName, _acceptance_rows
from .config import (
    ReportConfig,
    Unit,
    _drafts_needed,
    _open_source,
    _resume_key,
    _source_digest,
    _unit_rows,
    _unit_seed,
)
from .scheduler import client_timeout

__all__ = ["compute_unit", "position_values"]


def position_values(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    cfg: ReportConfig,
    rng_seed: int,
    row_ids: NDArray[np.int64],
    *,
    per_row: bool = False,
) -> dict[str, NDArray[Any]]:
    """alpha* of every (scheme, n) and every verifier's acceptance on validated rows ``p``, ``q``
    (``as_pair``'s output, or rows on their union support), keyed as in a shard. A verifier whose
    exact route is too costly for the batch is simulated (``exact`` False), from streams keyed by
    (``rng_seed``, verifier, scheme, n) and each row's id. ``per_row``: decide exact or simulated
    row by row instead (``exact`` is then an array), so a row's value never depends on its batch."""
    keep = np.ones(p.shape[0], dtype=bool)
    arrays: dict[str, NDArray[Any]] = {}
    for s, n in cfg.pairs():
        support = np.count_nonzero(q > 0, axis=1)
        ok = support >= _drafts_needed(s, n)[1] if s != "iid" else keep
        a = np.full(p.shape[0], np.nan)
        if ok.any():
            a[ok] = _core.bound.dual_batch(p[ok], q[ok], n, s, "auto", False, check_threads(cfg.threads))[0]
        arrays[f"alpha/{s}/{n}"] = a
    # Simulated estimates draw from streams keyed by (seed, data file, verifier, scheme, n) and each
    # row's id in its file: a position gets the same estimate whatever group, chunk or order it is in.
    for v, s, n in cfg.verifier_runs():
        name = cast(VerifierName, v)  # __post_init__ checked every verifier name
        kw: dict[str, Any] = {"threads": cfg.threads}
        if v in ("optimal-lp", "optimal", "sweep") or mixed_parts(s) is not None:
            kw["scheme"] = s
        if v in ("optimal", "sweep") and scheme_family(s) in ("wor", "top<m>+wor"):
            kw["work_budget"] = cfg.wor_work_budget

        sim = dict(samples=cfg.samples, rng=_unit_seed(rng_seed, f"{v}/{s}/{n}"), **kw)

        def run(rows: slice | NDArray[np.int64], exact: bool, name: Any = name, n: int = n, sim: Any = sim) -> Any:
            kw = {k: v for k, v in sim.items() if k not in ("samples", "rng")}
            if exact:
                return _acceptance_rows(name, p[rows], q[rows], n, exact=True, **kw)
            return _acceptance_rows(name, p[rows], q[rows], n, exact=False, row_ids=row_ids[rows], **sim)

        est, se, exact_rows = np.full(p.shape[0], np.nan), np.zeros(p.shape[0]), np.zeros(p.shape[0], dtype=bool)
        # rows whose q cannot draw the scheme's tokens have no value (as alpha* has none there)
        rows = np.arange(p.shape[0])
        can: Any = rows[np.count_nonzero(q > 0, axis=1) >= _drafts_needed(s, n)[1]] if per_row else slice(None)
        done = not cfg.exact
        if cfg.exact:
            try:
                est[can] = np.asarray(run(can, True), dtype=np.float64).reshape(-1)
                exact_rows[can], done = True, True
            except TooLargeError:
                pass
        for r in rows[can][~exact_rows[can]] if not done and per_row else ():
            try:
                est[r] = np.asarray(run(np.array([r]), True)).reshape(-1)[0]
                exact_rows[r] = True
            except TooLargeError:
                pass
        todo = rows[can][~exact_rows[can]]
        if todo.size:
            e, s_err = run(todo, False)
            est[todo] = np.asarray(e, dtype=np.float64).reshape(-1)
            se[todo] = np.asarray(s_err, dtype=np.float64).reshape(-1)
        arrays[f"verifier/{v}/{s}/{n}/value"] = est
        arrays[f"verifier/{v}/{s}/{n}/se"] = se
        arrays[f"verifier/{v}/{s}/{n}/exact"] = exact_rows if per_row else np.array(bool(exact_rows.all()))
    return arrays


def compute_unit(unit: Unit, cfg: ReportConfig, out_dir: str) -> str:
    """Compute one unit's per-position values and write them atomically; returns the shard path.
    The shard's metadata holds the unit's resume key (see :func:`_resume_key`)."""
    digest = _source_digest(unit.source)
    ds = _unit_rows(_open_source(unit.source, digest), unit)
    # A sparse sample (rows cut to their top tokens, Gemma) is reported on its rows conditioned on
    # the stored support; full rows (truncation <= 1e-6) are taken as stored.
    cut = len(ds) > 0 and max(ds.p_truncation.max(), ds.q_truncation.max()) > MAX_TRUNCATION
    # validated once for every alpha* and verifier below
    p, q, _ = as_pair(*ds.dense(np.float64, renormalize=bool(cut)), threads=check_threads(cfg.threads))
    row_ids = np.array([m["row"] for m in ds.meta], dtype=np.int64)
    arrays = position_values(p, q, cfg, _unit_seed(cfg.seed, digest), row_ids)
    if cfg.bounds and cut and "max_tokens" in ds.info:
        for s, n in cfg.pairs():
            if s in ("iid", "wor") and n >= 2:
                # what the cut can do: alpha* of the uncut rows lies in [low, high] (docs/findings/gemma.md)
                arrays[f"bounds/{s}/{n}/low"], arrays[f"bounds/{s}/{n}/high"] = sample_bounds(
                    ds, n, s, threads=cfg.threads
                )
    arrays["rows"] = row_ids
    arrays["sum_min"] = np.minimum(p, q).sum(axis=1)
    meta = dict(
        unit=unit.__dict__,
        fingerprint=cfg.fingerprint(),
        positions=len(ds),
        version=__version__,
        source_digest=digest,
        resume_key=_resume_key(unit, cfg, digest),
    )
    arrays["__meta__"] = np.array(json.dumps(meta))
    path = Path(out_dir) / "shards" / f"{unit.shard_name}.npz"
    # numpy's stub declares ``allow_pickle: bool`` before ``**kwds``, so mypy checks a ``**dict``
    # against it too; no shard key is "allow_pickle", so the arrays go in as plain keywords.
    shard: dict[str, Any] = arrays
    atomic_write(path, lambda fh: np.savez(fh, **shard))  # a killed run never leaves a half-written shard
    return str(path)


def _shard_stale(path: Path, key: dict[str, str]) -> str | None:
    """None if the shard at ``path`` was computed with resume key ``key``, else why it must be
    recomputed ("no shard", "unreadable shard", "code changed", "config changed", "data changed")."""
    if not path.exists():
        return "no shard"
    try:
        with np.load(path) as z:
            meta = json.loads(str(z["__meta__"]))
        stored = meta.get("resume_key")
    except Exception:
        return "unreadable shard"
    if not isinstance(stored, dict):
        return "code changed"  # written before shards had a resume key
    for part in ("code", "config", "data"):
        if stored.get(part) != key[part]:
            return f"{part} changed"
    return None


def _units_to_redo(
    units: Sequence[Any], out: str, key: Callable[[Any], dict[str, str]]
) -> tuple[list[Any], dict[str, int]]:
    """The units whose shard in ``out`` is missing or was written under another resume key, and the
    count of each reason; says on stderr how many were reused and why the others are redone."""
    todo, reasons = [], dict[str, int]()
    for u in units:
        why = _shard_stale(Path(out) / "shards" / f"{u.shard_name}.npz", key(u))
        if why is not None:
            todo.append(u)
            reasons[why] = reasons.get(why, 0) + 1
    line = f"resume: reused {len(units) - len(todo)} of {len(units)} groups"
    if todo:
        line += f" ({len(todo)} recomputed: " + ", ".join(f"{w} for {c}" for w, c in reasons.items()) + ")"
    print(line, file=sys.stderr, flush=True)
    return todo, reasons


def _atomic_save(path: Path, a: NDArray[Any]) -> None:
    """np.save to a temporary file renamed over ``path`` (a new inode: see _file_digest)."""
    atomic_write(path, lambda fh: np.save(fh, a))


class _Progress:
    """Progress of the units: a tqdm bar, or one plain stderr line per finished group, or nothing.

    enabled None (auto): the bar on a terminal (unless $CI is set), plain lines otherwise (logs,
    CI); True: the bar (plain lines without tqdm); False: silent."""

    def __init__(self, total: int, enabled: bool | None, desc: str) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self.t0 = time.perf_counter()
        self.bar: Any = None
        self.plain = False
        if enabled is False:
            return
        if enabled or (sys.stderr.isatty() and not os.environ.get("CI")):
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="group")
            except ImportError:
                pass
        self.plain = self.bar is None

    def update(self, unit: Any) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.plain:
            print(
                f"{self.desc}: {self.done}/{self.total} groups done ({unit.label()}) "
                f"{time.perf_counter() - self.t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _run_units(
    units: Sequence[Any],
    cfg: ReportConfig,
    out_dir: str,
    *,
    workers: int,
    scheduler: str | None,
    progress: bool | None,
    compute: Any = None,
) -> None:
    """Run ``compute(unit, cfg, out_dir)`` (default :func:`compute_unit`) for every unit: here, in
    ``workers`` local processes or on a Dask cluster; each unit writes its own shard."""
    compute = compute or compute_unit
    bar = _Progress(len(units), progress, "report")
    try:
        if scheduler:
            from dask.distributed import Client, as_completed

            with Client(scheduler, timeout=client_timeout()) as client:
                futures = client.map(compute, units, cfg=cfg, out_dir=out_dir, pure=False)
                of = {fut.key: u for fut, u in zip(futures, units, strict=True)}
                for fut in as_completed(futures):
                    fut.result()
                    bar.update(of[fut.key])
        elif workers > 1:
            from concurrent.futures import as_completed as done

            from .._workers import pool as worker_pool

            with worker_pool(workers) as pool:
                futs = {pool.submit(compute, u, cfg, out_dir): u for u in units}
                for f in done(futs):
                    f.result()
                    bar.update(futs[f])
        else:
            for u in units:
                compute(u, cfg, out_dir)
                bar.update(u)
    finally:
        bar.close()
