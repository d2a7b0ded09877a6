"""The main job: the gap between published verifiers and the optimal acceptance bound α*.

For every (domain, temperature, draft, scheme, n) of a dataset of real next-token distributions,
the report gives the mean α* with a 95% confidence interval over positions, each compatible
verifier's mean acceptance (exact where the exact route is affordable, otherwise simulated, with
its standard error), the absolute and relative gap to α* of that verifier's scheme, and the
implied expected tokens per target call (1 − α^(γ+1)) / (1 − α) for a chain of γ drafted positions.

Work is split into *units*: one (dataset file, domain, temperature, draft) group each. Every unit
writes its per-position values to ``<out>/shards/<name>.npz`` atomically, with a resume key in its
metadata: a hash of the data it read (the source file's bytes and the unit's selection), of the
config, and of the code (version, compiled extension, the Python modules on the compute path).
``resume=True`` reuses a shard only when its stored key equals the key of this run, and says on
stderr how many groups it reused and why the others were recomputed. Units run in this process,
in local processes (``workers``) or on a Dask cluster (``scheduler``) and give identical numbers
either way: each unit's randomness is keyed by (seed, unit key) only.

The code is split by concern: ``config`` (the config, units, resume keys),
``units`` (a unit's computation, its shard, resume, where units run), ``aggregate``
(records per group and pooled) and this module (the ``GapReport`` class and ``gap_report``). Every
name is importable from here. The findings come from ``findings`` (mergeable per-unit summaries,
``merge``), which the streaming log report shares.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._files import atomic_write
from .._version import __version__
from ..trees.shapes import expected_tokens as expected_tokens
from .aggregate import _aggregate as _aggregate
from .aggregate import _findings as _findings
from .aggregate import _records_for as _records_for
from .config import _FIXED_N as _FIXED_N
from .config import _VERIFIER_SCHEMES as _VERIFIER_SCHEMES
from .config import DEFAULT_VERIFIERS as DEFAULT_VERIFIERS
from .config import ReportConfig as ReportConfig
from .config import Unit as Unit
from .config import _code_digest as _code_digest
from .config import _file_digest as _file_digest
from .config import _resume_key as _resume_key
from .config import _source_digest as _source_digest
from .config import _unit_seed as _unit_seed
from .config import plan_units as plan_units
from .config import stored_temperatures
from .scheduler import check_scheduler
from .units import _atomic_save as _atomic_save
from .units import _run_units as _run_units
from .units import _units_to_redo as _units_to_redo
from .units import compute_unit as compute_unit
from .units import position_values as position_values

__all__ = ["ReportConfig", "GapReport", "gap_report", "expected_tokens", "DEFAULT_VERIFIERS"]


@dataclass
class GapReport:
    """The report: tidy records (one per (domain, temperature, draft, scheme, n, method)),
    findings, and the run's metadata. ``records`` is a list of plain dicts."""

    records: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    metadata: dict[str, Any]
    positions: dict[str, dict[str, NDArray[Any]]] = field(repr=False, default_factory=dict)

    COLUMNS = (
        "domain",
        "temperature",
        "draft",
        "scheme",
        "n",
        "method",
        "kind",
        "exact",
        "positions",
        "mean",
        "ci_low",
        "ci_high",
        "sim_se",
        "alpha_star",
        "gap_abs",
        "gap_rel",
        "tokens_per_call",
    )

    # ---------------------------------------------------------------- output
    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(self.COLUMNS), lineterminator="\n")
        w.writeheader()
        for r in self.records:
            w.writerow({k: r.get(k) for k in self.COLUMNS})
        text = buf.getvalue()
        if path is not None:
            _atomic_write(Path(path), text)
        return text

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        text = json.dumps(
            {"metadata": self.metadata, "findings": self.findings, "records": self.records},
            indent=1,
            default=_json_default,
        )
        if path is not None:
            _atomic_write(Path(path), text)
        return text

    @staticmethod
    def from_json(text: str) -> GapReport:
        d = json.loads(text)
        return GapReport(records=d["records"], findings=d["findings"], metadata=d["metadata"])

    @staticmethod
    def read_csv(text: str) -> list[dict[str, Any]]:
        """Records from a CSV written by :meth:`to_csv`, with numbers parsed back."""
        out = []
        for row in csv.DictReader(io.StringIO(text)):
            rec: dict[str, Any] = {}
            for k, v in row.items():
                if k in ("domain", "draft", "scheme", "method", "kind"):
                    rec[k] = v
                elif k == "exact":
                    rec[k] = v == "True"
                elif k in ("n", "positions"):
                    rec[k] = int(v)
                else:
                    rec[k] = float(v) if v not in ("", "None") else None
            out.append(rec)
        return out

    def markdown(self, *, max_rows: int | None = None, domain: str | None = None) -> str:
        """Terminal-readable markdown, at most 100 columns: one table per scheme, a row per (domain,
        T, draft, n) with α* ± the half-width of its 95% CI, the expected tokens per target call at
        α*, and each verifier of that scheme's acceptance (its gap α* − acceptance in parentheses,
        the CSV's ``gap_abs``; * = simulated).
        ``domain`` keeps only that domain ("all" = pooled over domains); ``max_rows`` caps the rows."""
        from .table import markdown

        return markdown(self.records, max_rows=max_rows, domain=domain)

    def findings_markdown(self) -> str:
        """The findings as short bullets wrapped at 100 columns, their numbers in small tables."""
        from .table import findings_text

        return findings_text(self.findings)

    def plot(self, out_dir: str | os.PathLike[str]) -> list[str]:
        """PNG plots (needs matplotlib, the ``plot`` extra). Returns the files written."""
        from . import plots as _plots

        return _plots.make_plots(self, Path(out_dir))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _no_positions(cfg: ReportConfig, have: Sequence[float]) -> ValueError:
    return ValueError(
        f"temperatures: no positions at T = {', '.join(f'{t:g}' for t in cfg.temperatures or ())} "
        f"(the dataset has T = {', '.join(f'{t:g}' for t in have)})"
    )


def _distribution_version(name: str) -> str:
    """The installed version of a distribution (highspy has no ``__version__``), "unknown" if its
    metadata cannot be read."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:  # pragma: no cover - a build without the metadata
        return "unknown"


def _atomic_write(path: Path, text: str) -> None:
    atomic_write(path, text)


def gap_report(
    dataset: str
    | os.PathLike[str]
    | Sequence[str | os.PathLike[str]]
    | tuple[NDArray[Any], NDArray[Any]]
    | None = None,
    *,
    config: ReportConfig | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool | None = None,
    command: str | None = None,
) -> GapReport:
    """Run the gap report and return it (records, findings, metadata).

    Parameters
    ----------
    dataset : None (the shipped SmolLM2 dataset), a dataset file, a directory of dataset shard
        files (``*.npz``), a list of files, or a ``(p, q)`` pair of (B, V) arrays of your own.
    config : what to compute (schemes, n values, verifiers, temperatures, exact/simulated, seed).
    out_dir : where per-unit shards go (a temporary directory if None).
    resume : reuse the shards in ``out_dir`` computed on the same data (content hash), config and
        code; the others are recomputed. One line on stderr says how many groups were reused and
        why the rest were not; ``metadata["units_reused"]`` records the count.
    workers : local processes.
    scheduler : a Dask scheduler address (``tcp://host:port``).
    progress : None (auto: a bar on a terminal, one plain stderr line per finished group
        otherwise), True (the bar), False (silent).
    """
    cfg = config or ReportConfig()
    t0 = time.perf_counter()
    tmp_holder = None
    if out_dir is None:
        tmp_holder = tempfile.TemporaryDirectory(prefix="mdsd-report-")
        out_dir = tmp_holder.name
    out = os.path.abspath(out_dir)  # shipped to workers, which may run in another directory
    sources: list[str]
    if dataset is None:
        sources = [""]
    elif isinstance(dataset, tuple) and len(dataset) == 2 and not isinstance(dataset[0], (str, os.PathLike)):
        arrays_dir = Path(out) / "arrays"
        arrays_dir.mkdir(parents=True, exist_ok=True)
        pp, qq = arrays_dir / "p.npy", arrays_dir / "q.npy"
        _atomic_save(pp, np.asarray(dataset[0]))  # a new file each time: the content hash is redone
        _atomic_save(qq, np.asarray(dataset[1]))
        sources = [f"arrays:{pp}|{qq}"]
    elif isinstance(dataset, (str, os.PathLike)):
        path = Path(dataset)
        if path.is_dir():
            sources = [os.path.abspath(f) for f in sorted(path.glob("*.npz"))]
            if not sources:
                raise ValueError(f"dataset: no .npz dataset files in directory {path}")
        elif not path.exists():
            raise FileNotFoundError(f"dataset: no such file or directory: {path}")
        else:
            sources = [os.path.abspath(path)]
    else:
        sources = [str(s) if str(s).startswith("arrays:") or not str(s) else os.path.abspath(s) for s in dataset]
    if scheduler:
        check_scheduler(scheduler)  # before the data is read: an unreachable cluster fails in seconds
    stored = [stored_temperatures(s) for s in sources] if cfg.temperatures is not None else []
    if stored and all(h is not None for h in stored):  # checked before the data loads
        have = sorted(set().union(*stored))  # type: ignore[arg-type]
        if not any(abs(t - x) < 1e-9 for t in have for x in cfg.temperatures or ()):
            raise _no_positions(cfg, have)
    units = plan_units(sources, cfg)
    if not units:
        raise _no_positions(
            cfg, sorted({u.temperature for u in plan_units(sources, dataclasses.replace(cfg, temperatures=None))})
        )
    todo, reasons = units, dict[str, int]()
    if resume:
        todo, reasons = _units_to_redo(units, out, lambda u: _resume_key(u, cfg, _source_digest(u.source)))
    _run_units(todo, cfg, out, workers=workers, scheduler=scheduler, progress=progress)
    records, positions = _aggregate(units, cfg, out)
    findings = _findings(positions, cfg)
    highs_version = _distribution_version("highspy")
    metadata = dict(
        mdsd_fast=__version__,
        numpy=np.__version__,
        highspy=highs_version,
        dataset=sources or ["shipped"],
        config=dict(cfg.__dict__),
        units=len(units),
        units_computed=len(todo),
        units_reused=len(units) - len(todo),
        recompute_reasons=reasons,
        command=command or "",
        seconds=round(time.perf_counter() - t0, 3),
        confidence="95% normal interval over positions; * = simulated acceptance",
        gap="gap_abs = alpha* - acceptance (> 0: below the bound); gap_rel = gap_abs / alpha*",
    )
    rep = GapReport(records=records, findings=findings, metadata=metadata, positions=positions)
    if tmp_holder is not None:
        tmp_holder.cleanup()
    return rep


def iter_records(rep: GapReport, **match: Any) -> Iterable[dict[str, Any]]:
    """Records whose fields equal the given values, e.g. ``iter_records(rep, scheme="wor", n=2)``."""
    for r in rep.records:
        if all(r.get(k) == v for k, v in match.items()):
            yield r
