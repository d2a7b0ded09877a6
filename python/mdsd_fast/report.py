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
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import io
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from . import __version__, _core
from ._scheduler import check_scheduler, client_timeout
from ._validate import SCHEMES, as_pair, check_threads, mixed_parts, scheme_family
from .bound import TooLargeError
from .data import MAX_TRUNCATION, LMDataset, default_dataset_path, from_arrays, load_dataset
from .limits import REPORT_MAX_N
from .truncation import sample_bounds
from .verifiers import VerifierName, _acceptance_rows, verifiers

__all__ = ["ReportConfig", "GapReport", "gap_report", "expected_tokens", "DEFAULT_VERIFIERS"]

#: Verifiers in the default report. "optimal-lp" is left out: its flow LP enumerates draft sets,
#: which is out of reach at real vocabulary sizes (ask for it on small data); "optimal" is the
#: full-vocabulary optimal verifier for i.i.d. drafts, "sweep" its without-replacement
#: construction (at alpha*_wor wherever certified, lossless everywhere).
DEFAULT_VERIFIERS = ("sd", "rrs", "kseq", "rrs-wor", "spechub", "greedy", "topk", "optimal", "sweep")

# The schemes under which the report lists each verifier, and the n it handles (None: every n >= 2
# of the config), from the verifier table. "optimal" is listed under "iid" only: for "wor" it
# refuses the rows it cannot certify, so the report runs "sweep", its keep policy, there.
_VERIFIER_SCHEMES: dict[str, tuple[str, ...]] = {name: v.report_schemes for name, v in verifiers.items()}
_FIXED_N = {name: v.fixed_n for name, v in verifiers.items() if v.fixed_n is not None}


def _drafts_needed(scheme: str, n: int) -> tuple[int, int]:
    """(the smallest n the scheme has, tokens with q > 0 a row needs at n drafts) for ``scheme``."""
    mp = mixed_parts(scheme)
    if mp is not None:
        return mp[0] + 1, (n if mp[1] == "wor" else mp[0] + 1)
    return 0, (1 if scheme == "iid" else n)


def expected_tokens(alpha: float | NDArray[np.float64], gamma: int) -> Any:
    """Expected tokens per target call for γ drafted positions with per-position acceptance α:
    (1 − α^(γ+1)) / (1 − α), which is γ + 1 at α = 1."""
    a = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a >= 1.0, gamma + 1.0, (1.0 - a ** (gamma + 1)) / (1.0 - a))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ReportConfig:
    """What a report computes. Everything that changes a number is part of the shard key."""

    #: any scheme of ``optimal_acceptance``, mixed ones ("top1+wor", ...) included
    schemes: tuple[str, ...] = ("iid", "wor", "greedy", "topk")
    ns: tuple[int, ...] = (1, 2, 3, 4)
    verifiers: tuple[str, ...] = DEFAULT_VERIFIERS
    temperatures: tuple[float, ...] | None = None
    exact: bool = True  #: exact acceptance where affordable; False = simulate every verifier
    samples: int = 4000  #: simulated steps per position when simulating
    #: work budget per position of the wor route of "optimal" / "sweep" (None: WOR_WORK_BUDGET)
    wor_work_budget: float | None = None
    seed: int = 0
    gamma: int = 4
    #: on a cut sample (Gemma): intervals containing alpha* of the uncut rows, iid and wor, n >= 2
    #: (``mdsd_fast.truncation.sample_bounds``; ~0.2-0.3 s per position and n at V = 262,144)
    bounds: bool = False
    threads: int | None = None  #: C++ threads per unit (None = all cores)

    def __post_init__(self) -> None:
        for s in self.schemes:
            if not isinstance(s, str) or (s not in SCHEMES and mixed_parts(s) is None):
                raise ValueError(
                    f"schemes: unknown scheme {s!r} (expected iid, wor, greedy, topk, top<m>+iid, top<m>+wor)"
                )
        for n in self.ns:
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= REPORT_MAX_N:
                raise ValueError(f"ns: every n must be an integer in 1..{REPORT_MAX_N}, got {n!r}")
        for v in self.verifiers:
            if v not in verifiers:
                raise ValueError(f"verifiers: unknown verifier {v!r} (known: {', '.join(verifiers)})")
        for s in self.schemes:
            if all(_drafts_needed(s, n)[0] > n for n in self.ns):
                raise ValueError(
                    f"schemes: {s} needs n >= {_drafts_needed(s, 1)[0]}, got n = {', '.join(map(str, self.ns))}"
                )
        if self.samples < 100:
            raise ValueError(f"samples: need at least 100 simulated steps per position, got {self.samples}")
        if self.gamma < 1:
            raise ValueError(f"gamma: must be >= 1, got {self.gamma}")
        b = self.wor_work_budget
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 < b < math.inf):
            raise ValueError(f"wor_work_budget: expected a positive number of grid operations or None, got {b!r}")

    def fingerprint(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k not in ("threads", "gamma")}
        d["version"] = __version__
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def pairs(self) -> list[tuple[str, int]]:
        """(scheme, n) pairs with an alpha*: a mixed scheme top<m>+... needs n > m."""
        return [(s, n) for s in self.schemes for n in self.ns if _drafts_needed(s, n)[0] <= n]

    def verifier_runs(self) -> list[tuple[str, str, int]]:
        """(verifier, scheme, n) triples the report evaluates."""
        runs = []
        for v in self.verifiers:
            for s in self.schemes:
                if scheme_family(s) not in _VERIFIER_SCHEMES.get(v, ()):
                    continue
                for n in self.ns:
                    if _drafts_needed(s, n)[0] > n:
                        continue
                    fixed = _FIXED_N.get(v)
                    if (fixed is not None and n != fixed) or (fixed is None and n < 2):
                        continue
                    if v == "sd" and s != self.schemes[0]:
                        continue  # n = 1 is the same for every scheme: report it once
                    runs.append((v, s, n))
        return runs


@dataclass(frozen=True)
class Unit:
    """One group of positions: a dataset file (or user arrays) and a (domain, temperature, draft)."""

    source: str  #: dataset path, "" for the shipped dataset, or "arrays:<path_p>|<path_q>"
    domain: str
    temperature: float
    draft: str

    @property
    def key(self) -> str:
        stem = Path(self.source).stem if self.source else "shipped"
        if self.source.startswith("arrays:"):
            stem = "arrays-" + hashlib.sha256(self.source.encode()).hexdigest()[:8]
        t = "nan" if math.isnan(self.temperature) else f"{self.temperature:g}"
        return f"{stem}__{self.domain}__T{t}__{self.draft}".replace("/", "_").replace(" ", "_")

    @property
    def shard_name(self) -> str:
        """File name (without .npz) of the unit's shard: the key, plus a hash of the dataset path
        for dataset files, so that files of the same name in different folders do not share one."""
        if self.source and not self.source.startswith("arrays:"):
            return f"{self.key}__{hashlib.sha256(self.source.encode()).hexdigest()[:8]}"
        return self.key

    def label(self) -> str:
        """Short human-readable name of the group (progress lines)."""
        if self.source.startswith("arrays:"):
            return "user arrays"
        t = "" if math.isnan(self.temperature) else f" T={self.temperature:g}"
        head = f"{Path(self.source).stem}: " if self.source else ""
        return f"{head}{self.draft}{t} {self.domain}"


_file_digests: dict[tuple[Any, ...], str] = {}


def _file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, memoised per process on (path, size, mtime, inode): a file that
    is rewritten or replaced is hashed again."""
    real = os.path.realpath(path)
    st = os.stat(real)
    memo = (real, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
    digest = _file_digests.get(memo)
    if digest is None:
        h = hashlib.sha256()
        with open(real, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        _file_digests[memo] = digest
    return digest


def _source_digest(source: str) -> str:
    """Content hash of everything a source reads: the dataset file, or both user array files."""
    if source.startswith("arrays:"):
        pp, qq = source[len("arrays:") :].split("|")
        return hashlib.sha256(f"arrays:{_file_digest(pp)}:{_file_digest(qq)}".encode()).hexdigest()
    return _file_digest(source or default_dataset_path())


#: The modules whose code decides a shard's numbers (with the compiled extension).
_COMPUTE_MODULES = ("__init__.py", "_validate.py", "bound.py", "data.py", "report.py", "verifiers.py")


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code version a shard was computed with: mdsd_fast.__version__, the bytes of the compiled
    extension (an unreleased rebuild of the same version differs) and of the compute modules."""
    from . import _core

    h = hashlib.sha256(f"mdsd_fast {__version__}".encode())
    here = Path(__file__).resolve().parent
    for f in [Path(_core.__file__), *(here / m for m in _COMPUTE_MODULES)]:
        h.update(f"\0{f.name}\0{_file_digest(f) if f.exists() else '-'}".encode())
    return h.hexdigest()[:32]


def _resume_key(unit: Unit, cfg: ReportConfig, source_digest: str) -> dict[str, str]:
    """What a shard's numbers depend on: the data (the source's content hash and the unit's
    selection of rows), the config and the code. A shard is reused only if all three are equal."""
    sel = json.dumps(
        dict(
            shard=unit.shard_name,
            domain=unit.domain,
            draft=unit.draft,
            temperature=None if math.isnan(unit.temperature) else unit.temperature,
        ),
        sort_keys=True,
    )
    data = hashlib.sha256(f"{source_digest}|{sel}".encode()).hexdigest()[:32]
    return dict(data=data, config=cfg.fingerprint(), code=_code_digest())


@functools.lru_cache(maxsize=4)
def _open_source(source: str, digest: str) -> LMDataset:
    """Load a source once per process (every unit of a file shares it); keyed by its content hash
    too, so a file rewritten between two reports in one process is read again."""
    if source.startswith("arrays:"):
        pp, qq = source[len("arrays:") :].split("|")
        return from_arrays(np.load(pp), np.load(qq))
    return load_dataset(source or None)


def _unit_rows(ds: LMDataset, unit: Unit) -> LMDataset:
    sel = ds
    if not ds.info.get("user_arrays") and not unit.source.startswith("arrays:"):
        sel = ds.select(domain=unit.domain, draft=unit.draft, temperature=unit.temperature)
    return sel


def _unit_seed(seed: int, key: str) -> int:
    h = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


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
            a[ok] = _core.dual_batch(p[ok], q[ok], n, s, "auto", False, check_threads(cfg.threads))[0]
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
    p, q, _ = as_pair(*ds.dense(np.float64, renormalize=bool(cut)))
    row_ids = np.array([m["row"] for m in ds.meta], dtype=np.int64)
    arrays = position_values(p, q, cfg, _unit_seed(cfg.seed, digest), row_ids)
    if cfg.bounds and cut and "max_tokens" in ds.info:
        for s, n in cfg.pairs():
            if s in ("iid", "wor") and n >= 2:
                # what the cut can do: alpha* of the uncut rows lies in [low, high] (docs/gemma.md)
                arrays[f"bounds/{s}/{n}/low"], arrays[f"bounds/{s}/{n}/high"] = sample_bounds(ds, n, s)
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
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    try:
        # numpy's stub declares ``allow_pickle: bool`` before ``**kwds``, so mypy checks a ``**dict``
        # against it too; no shard key is "allow_pickle", so the arrays go in as plain keywords.
        shard: dict[str, Any] = arrays
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **shard)
        os.replace(tmp, path)  # atomic: a killed run never leaves a half-written shard
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
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


def _ci95(x: NDArray[np.float64]) -> tuple[float, float, float]:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    h = 1.96 * float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else math.nan
    return m, m - h, m + h


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
        """Terminal-readable markdown: one table per scheme, a row per (domain, T, draft, n) with
        α* (95% CI clipped to [0, 1]), the expected tokens per target call at α*, and each verifier
        of that scheme's acceptance (its difference to α* in parentheses; * = simulated).
        ``domain`` keeps only that domain ("all" = pooled over domains); ``max_rows`` caps the rows."""
        from ._table import markdown

        return markdown(self.records, max_rows=max_rows, domain=domain)

    def findings_markdown(self) -> str:
        lines = []
        for f in self.findings:
            mark = "observed" if f["holds"] is None else ("holds" if f["holds"] else "DOES NOT HOLD")
            lines.append(f"- {f['claim']}: **{mark}** — {f['evidence']}")
        return "\n".join(lines)

    def plot(self, out_dir: str | os.PathLike[str]) -> list[str]:
        """PNG plots (needs matplotlib, the ``plot`` extra). Returns the files written."""
        from . import _plots

        return _plots.make_plots(self, Path(out_dir))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _atomic_save(path: Path, a: NDArray[Any]) -> None:
    """np.save to a temporary file renamed over ``path`` (a new inode: see _file_digest)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, a)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


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


def plan_units(sources: Sequence[str], cfg: ReportConfig) -> list[Unit]:
    """Every (source, domain, temperature, draft) group with at least one position."""
    units = []
    for src in sources:
        if src.startswith("arrays:"):
            units.append(Unit(src, "user", math.nan, "user"))
            continue
        ds = _open_source(src, _source_digest(src))
        dom = ds.column("domain")
        tem = ds.column("temperature")
        dra = ds.column("draft")
        for d in ds.domains:
            for t in ds.temperatures:
                if cfg.temperatures is not None and not any(abs(t - x) < 1e-9 for x in cfg.temperatures):
                    continue
                for r in ds.drafts:
                    if np.any((dom == d) & (np.abs(tem - t) < 1e-9) & (dra == r)):
                        units.append(Unit(src, str(d), float(t), str(r)))
    return units


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
            from concurrent.futures import ProcessPoolExecutor
            from concurrent.futures import as_completed as done

            with ProcessPoolExecutor(max_workers=workers) as pool:
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


def _records_for(base: dict[str, Any], arr: dict[str, NDArray[Any]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """Records of one group of positions (per-position arrays as stored in a shard)."""
    records: list[dict[str, Any]] = []
    alpha_mean: dict[tuple[str, int], float] = {}
    for s, n in cfg.pairs():
        a = arr[f"alpha/{s}/{n}"]
        m, lo, hi = _ci95(a)
        alpha_mean[(s, n)] = m
        records.append(
            dict(
                base,
                scheme=s,
                n=n,
                method="alpha*",
                kind="bound",
                exact=True,
                positions=int(np.isfinite(a).sum()),
                mean=m,
                ci_low=lo,
                ci_high=hi,
                sim_se=0.0,
                alpha_star=m,
                gap_abs=0.0,
                gap_rel=0.0,
                tokens_per_call=expected_tokens(m, cfg.gamma),
            )
        )
    for v, s, n in cfg.verifier_runs():
        val = arr[f"verifier/{v}/{s}/{n}/value"]
        se = arr[f"verifier/{v}/{s}/{n}/se"]
        exact = bool(np.all(arr[f"verifier/{v}/{s}/{n}/exact"]))
        m, lo, hi = _ci95(val)
        ok = np.isfinite(val)
        sim_se = float(math.sqrt(float(np.sum(se[ok] ** 2))) / max(1, int(ok.sum())))
        for scheme in [s] if v != "sd" else list(cfg.schemes):
            a_s = alpha_mean.get((scheme, n), math.nan)
            records.append(
                dict(
                    base,
                    scheme=scheme,
                    n=n,
                    method=v,
                    kind="verifier",
                    exact=exact,
                    positions=int(ok.sum()),
                    mean=m,
                    ci_low=lo,
                    ci_high=hi,
                    sim_se=sim_se,
                    alpha_star=a_s,
                    gap_abs=a_s - m,
                    gap_rel=(a_s - m) / a_s if a_s > 0 else math.nan,
                    tokens_per_call=expected_tokens(m, cfg.gamma),
                )
            )
    return records


def _aggregate(
    units: list[Unit], cfg: ReportConfig, out_dir: str
) -> tuple[list[dict[str, Any]], dict[str, dict[str, NDArray[Any]]]]:
    """Per-unit records, then the same pooled over domains (domain = "all") per (temperature, draft)."""
    records: list[dict[str, Any]] = []
    positions: dict[str, dict[str, NDArray[Any]]] = {}
    pooled: dict[tuple[Any, str], list[dict[str, NDArray[Any]]]] = {}
    for u in units:
        with np.load(Path(out_dir) / "shards" / f"{u.shard_name}.npz") as z:
            arr = {k: z[k] for k in z.files if k != "__meta__"}
        positions[u.shard_name] = arr
        temp = None if math.isnan(u.temperature) else u.temperature
        records += _records_for(dict(domain=u.domain, temperature=temp, draft=u.draft), arr, cfg)
        pooled.setdefault((temp, u.draft), []).append(arr)
    if len({u.domain for u in units}) > 1:
        for (temp, draft), arrs in pooled.items():
            cat = {
                k: (np.concatenate([a[k] for a in arrs]) if arrs[0][k].ndim else np.array([a[k] for a in arrs]))
                for k in arrs[0]
            }
            records += _records_for(dict(domain="all", temperature=temp, draft=draft), cat, cfg)
    return records, positions


def _findings(positions: dict[str, dict[str, NDArray[Any]]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """The seed paper's findings, checked position by position on the data, with numbers."""

    def cat(key: str) -> NDArray[np.float64]:
        parts = [a[key] for a in positions.values() if key in a]
        return np.concatenate(parts) if parts else np.zeros(0)

    out: list[dict[str, Any]] = []
    tol = 1e-9
    if "iid" in cfg.schemes and "wor" in cfg.schemes:
        worst, total, mean_gain = math.inf, 0, []
        for n in cfg.ns:
            if n < 2:
                continue
            d = cat(f"alpha/wor/{n}") - cat(f"alpha/iid/{n}")
            d = d[np.isfinite(d)]
            worst = min(worst, float(d.min()) if d.size else math.inf)
            total += d.size
            mean_gain.append(f"n={n}: {d.mean():+.4f}")
        out.append(
            dict(
                claim="α*_wor ≥ α*_iid at every n ≥ 2",
                holds=worst >= -tol,
                evidence=f"min over {total} (position, n) pairs of α*_wor − α*_iid = {worst:+.2e}; mean gain "
                + ", ".join(mean_gain),
            )
        )
    attaining = ("greedy", "spechub", "optimal", "topk")  # verifiers that reach the bound of their scheme
    checks = [("rrs", "iid"), ("kseq", "iid"), ("rrs-wor", "wor"), ("greedy", "greedy"), ("spechub", "greedy")]
    checks += [("topk", "topk"), ("optimal", "iid"), ("sweep", "wor")]
    for s in cfg.schemes:  # mixed schemes: every verifier the report ran under them
        if mixed_parts(s) is not None:
            checks += [(v, s) for v in cfg.verifiers if scheme_family(s) in _VERIFIER_SCHEMES.get(v, ())]
    for v, s in checks:
        if v not in cfg.verifiers or s not in cfg.schemes:
            continue
        diffs, below, above, count, exact_all = [], 0, 0, 0, True
        for n in cfg.ns:
            key = f"verifier/{v}/{s}/{n}/value"
            if not any(key in a for a in positions.values()):
                continue
            val = cat(key)
            se = cat(f"verifier/{v}/{s}/{n}/se")
            a = cat(f"alpha/{s}/{n}")
            exact_all &= all(
                bool(arr[f"verifier/{v}/{s}/{n}/exact"])
                for arr in positions.values()
                if f"verifier/{v}/{s}/{n}/exact" in arr
            )
            ok = np.isfinite(val) & np.isfinite(a)
            gap = float(np.mean(a[ok] - val[ok]))
            # 4 decimals, or 2 significant digits once the gap is below them
            diffs.append(f"n={n}: mean gap {gap:.4f}" if abs(gap) >= 5e-4 else f"n={n}: mean gap {gap:.2g}")
            if v == "sweep":  # where it is certified it is "optimal": count the positions at the bound
                diffs[-1] += f" (at α*_{s} within 1e-9: {np.mean(np.abs(a[ok] - val[ok]) <= 1e-9):.0%})"
            # a simulated estimate of exactly 0 or 1 reports se = 0: floor it by the binomial SE at α*
            se_eff = se[ok]
            if not exact_all:
                se_eff = np.maximum(
                    se_eff, np.sqrt(np.clip(a[ok] * (1 - a[ok]), 0, None) / cfg.samples) + 1 / cfg.samples
                )
            below += int(np.sum(a[ok] - val[ok] > 4 * se_eff + 1e-9))
            above += int(np.sum(val[ok] - a[ok] > 4 * se_eff + 1e-9))
            count += int(ok.sum())
        if v in attaining:
            worst = 0.0
            for n in cfg.ns:
                key = f"verifier/{v}/{s}/{n}/value"
                if any(key in a for a in positions.values()):
                    val, a = cat(key), cat(f"alpha/{s}/{n}")
                    ok = np.isfinite(val) & np.isfinite(a)
                    worst = max(worst, float(np.max(np.abs(a[ok] - val[ok]))) if ok.any() else 0.0)
            out.append(
                dict(
                    claim=f"{v} attains α*_{s}",
                    holds=worst < 1e-9,
                    evidence=f"max |α*_{s} − {v}| over {count} (position, n) pairs = {worst:.1e}",
                )
            )
        else:
            out.append(
                dict(
                    claim=f"{v} stays below α*_{s}",
                    holds=count > 0 and above == 0,
                    evidence=f"{above} of {count} (position, n) pairs above the bound, {below} strictly below "
                    f"({'exact' if exact_all else 'simulated: beyond 4 standard errors'}); " + "; ".join(diffs),
                )
            )
    out += _truncation_findings(cat, cfg)
    for det in [s for s in cfg.schemes if s in ("greedy", "topk") or mixed_parts(s) is not None]:
        parts = []
        for other in ("iid", "wor"):
            if other not in cfg.schemes:
                continue
            for n in cfg.ns:
                g, o = cat(f"alpha/{det}/{n}"), cat(f"alpha/{other}/{n}")
                ok = np.isfinite(g) & np.isfinite(o)
                if n >= 2 and ok.any():
                    parts.append(
                        f"vs {other} n={n}: {det} wins at {np.mean(g[ok] > o[ok] + tol):.0%} of positions "
                        f"(mean α* {g[ok].mean():.4f} vs {o[ok].mean():.4f})"
                    )
        if parts:
            out.append(
                dict(
                    claim=f"where {det} drafts beat or lose to iid / wor drafts", holds=None, evidence="; ".join(parts)
                )
            )
    return out


def _truncation_findings(cat: Callable[[str], NDArray[np.float64]], cfg: ReportConfig) -> list[dict[str, Any]]:
    """On a cut sample: how wide the intervals around alpha* of the uncut rows are, and whether
    the wor-over-iid gain survives the cut (wor's low end above iid's high end)."""
    parts, wins = [], []
    for n in cfg.ns:
        for s in ("iid", "wor"):
            lo, hi, a = cat(f"bounds/{s}/{n}/low"), cat(f"bounds/{s}/{n}/high"), cat(f"alpha/{s}/{n}")
            if lo.size:
                w = hi - lo
                parts.append(
                    f"{s} n={n}: mean α* {a.mean():.4f} of the cut rows, full rows in "
                    f"[{lo.mean():.4f}, {hi.mean():.4f}] (width p50 {np.median(w):.3f}, max {w.max():.3f})"
                )
        lw, hi_i = cat(f"bounds/wor/{n}/low"), cat(f"bounds/iid/{n}/high")
        if lw.size and lw.size == hi_i.size:
            wins.append(f"n={n}: {np.mean(lw > hi_i):.0%}")
    if not parts:
        return []
    evidence = "; ".join(parts)
    if wins:
        evidence += "; α*_wor > α*_iid whatever the cut left out (wor low > iid high) at "
        evidence += ", ".join(wins) + " of positions"
    return [dict(claim="α* of the uncut rows (the sample is cut to its top tokens)", holds=None, evidence=evidence)]


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

    dataset : None (the shipped SmolLM2 dataset), a dataset file, a directory of dataset shard
        files (``*.npz``), a list of files, or a ``(p, q)`` pair of (B, V) arrays of your own.
    config : what to compute (schemes, n values, verifiers, temperatures, exact/simulated, seed).
    out_dir : where per-unit shards go (a temporary directory if None).
    resume : reuse the shards in ``out_dir`` computed on the same data (content hash), config and
        code; the others are recomputed. One line on stderr says how many groups were reused and
        why the rest were not; ``metadata["units_reused"]`` records the count.
    workers : local processes; scheduler : a Dask scheduler address (``tcp://host:port``).
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
    units = plan_units(sources, cfg)
    if not units:
        have = sorted({u.temperature for u in plan_units(sources, dataclasses.replace(cfg, temperatures=None))})
        raise ValueError(
            f"temperatures: no positions at T = {', '.join(f'{t:g}' for t in cfg.temperatures or ())} "
            f"(the dataset has T = {', '.join(f'{t:g}' for t in have)})"
        )
    todo, reasons = units, dict[str, int]()
    if resume:
        todo, reasons = _units_to_redo(units, out, lambda u: _resume_key(u, cfg, _source_digest(u.source)))
    _run_units(todo, cfg, out, workers=workers, scheduler=scheduler, progress=progress)
    records, positions = _aggregate(units, cfg, out)
    findings = _findings(positions, cfg)
    try:
        import highspy

        highs_version = getattr(highspy, "__version__", "")
    except Exception:  # pragma: no cover
        highs_version = ""
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
