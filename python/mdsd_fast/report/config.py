"""The gap report's configuration and its units of work.

``ReportConfig`` says what a report computes; a ``Unit`` is one (dataset file, domain, temperature,
draft) group. A unit's resume key hashes what its numbers depend on: the data it reads (the source's
bytes and the unit's selection), the config and the code (version, compiled extension, the compute
modules). ``plan_units`` lists the units of a set of sources.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..data import LMDataset, default_dataset_path, from_arrays, load_dataset
from ..inputs.rules import SCHEMES, check_threads, mixed_parts, scheme_family
from ..limits import REPORT_MAX_N
from ..verifiers.registry import verifiers

__all__ = ["DEFAULT_VERIFIERS", "ReportConfig", "Unit", "plan_units"]

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
    #: C++ threads per unit, validation included (None = all cores; checked as every ``threads=``)
    threads: int | None = None

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
        check_threads(self.threads)  # a bad value is named here, not in the first unit (or a worker)

    def fingerprint(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k not in ("threads", "gamma")}
        d["version"] = __version__
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def pairs(self) -> list[tuple[str, int]]:
        """(scheme, n) pairs with an alpha*: a mixed scheme top<m>+... needs n > m."""
        return [(s, n) for s in self.schemes for n in self.ns if _drafts_needed(s, n)[0] <= n]

    def idle_verifiers(self) -> dict[str, str]:
        """The verifiers of the config that run nowhere (no scheme they draft for, or not at their
        n), each with the reason, e.g. ``{"rrs": "runs under iid, top<m>+iid drafts, not under wor"}``."""
        ran = {v for v, _, _ in self.verifier_runs()}
        out = {}
        for v in self.verifiers:
            if v in ran:
                continue
            own = _VERIFIER_SCHEMES.get(v, ())
            if not any(scheme_family(s) in own for s in self.schemes):
                out[v] = f"runs under {', '.join(own)} drafts, not under {', '.join(self.schemes)}"
            else:
                fixed = _FIXED_N.get(v)
                at = f"n = {fixed} only" if fixed is not None else "n >= 2 only"
                out[v] = f"runs at {at}, not at n = {', '.join(map(str, self.ns))}"
        return out

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


#: The package's parts whose code decides a shard's numbers (with the compiled extension): every
#: module under these paths, relative to the package.
_COMPUTE_PARTS = ("__init__.py", "limits.py", "inputs", "bound", "verifiers", "data", "report")


def compute_modules(parts: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(name in the package, path) of the .py files under ``parts`` (files or folders), in a fixed order."""
    pkg = Path(__file__).resolve().parent.parent
    out: list[Path] = []
    for part in parts:
        f = pkg / part
        out += sorted(f.rglob("*.py")) if f.is_dir() else [f]
    return [(f.relative_to(pkg).as_posix(), f) for f in out]


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code version a shard was computed with: mdsd_fast.__version__, the bytes of the compiled
    extension (an unreleased rebuild of the same version differs) and of the compute modules. Both
    builds of the core count (mdsd_fast._isa: they give the same bits), so a run resumed on a CPU
    that loads the other build is the same code version."""
    from .. import _core

    h = hashlib.sha256(f"mdsd_fast {__version__}".encode())
    ext = Path(str(_core.__file__)).parent
    builds = sorted({ext / f"{b}{s}" for b in ("_core", "_core_avx2") for s in EXTENSION_SUFFIXES} & set(ext.iterdir()))
    for name, f in [*((b.name, b) for b in builds), *compute_modules(_COMPUTE_PARTS)]:
        h.update(f"\0{name}\0{_file_digest(f) if f.exists() else '-'}".encode())
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


def stored_temperatures(source: str) -> set[float] | None:
    """The temperatures of a dataset file, read from its small per-context member alone (a second,
    not the seconds of a full load); None for user arrays or a file that does not read so (the full
    load then says what is wrong with it)."""
    if source.startswith("arrays:"):
        return None
    try:
        with np.load(source or default_dataset_path(), allow_pickle=False) as z:
            return {float(t) for t in np.unique(z["ctx_temperature"])}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None


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
