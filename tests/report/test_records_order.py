"""The reports' records (means, 95% intervals, standard errors) from exact moments (_merge.Moments).

* ``exact_square_sum`` is the exact sum of squares (checked against ``fractions.Fraction``, every
  float64 range included), and ``Moments.ci95`` the exactly rounded variance of the mean, then one
  square root: checked against Fractions to an ulp and against numpy's mean and std.
* The log report's records are bit for bit the same under reversed and shuffled unit order, chunk
  sizes and 1 or 2 workers; the dense report's pooled records under reversed and shuffled units.
* The log report's records of a converted dataset equal the dense report's, bit for bit (one
  formula); a simulated verifier is marked simulated in every domain's record, not only the pool's.
* Negative controls: the previous incremental merge (Chan's pairwise update in unit order) and the
  previous concatenated numpy mean change in the last ulp when the units are reversed. On the
  previous aggregation code (with this _merge.py) the four report tests fail: reversed units move
  means and interval ends by an ulp, the log and dense records differ by an ulp, and per-domain log
  records said exact for a simulated verifier.
"""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.report import ReportConfig, gap_report
from mdsd_fast.report.aggregate import _aggregate
from mdsd_fast.report.config import plan_units
from mdsd_fast.report.merge import SCALE, Moments, exact_square_sum

CFG = ReportConfig(schemes=("iid", "wor"), ns=(1, 2), verifiers=("sd", "rrs", "rrs-wor", "optimal"), threads=1)
KEY = ("domain", "temperature", "draft", "scheme", "n", "method", "kind")


def _values(rng: np.random.Generator) -> np.ndarray:
    """Probabilities of many scales, zeros, negatives, subnormals and the ends of the fast range."""
    edges = [0.0, 5e-324, 2.0**-1074 * 3, 1e-200, 2.0**-480, 2.0**-481, 2.0**511 * (1 - 2**-53), 2.0**511, 1e300]
    return np.concatenate(
        [rng.random(400) ** rng.integers(1, 60), -rng.random(20), edges, rng.standard_normal(50) * 1e-150]
    )


def test_exact_square_sum_is_exact() -> None:
    rng = np.random.default_rng(11)
    for _ in range(5):
        x = _values(rng)
        exact = sum(Fraction(float(v)) ** 2 for v in x)
        assert Fraction(exact_square_sum(x), 1 << (2 * SCALE)) == exact
    y = rng.random(10_000)  # the control: the rounded squares' float sum is not exact here
    assert Fraction(float(np.sum(y * y))) != sum(Fraction(float(v)) ** 2 for v in y)


def test_ci95_exactly_rounded_and_against_numpy() -> None:
    rng = np.random.default_rng(12)
    for size in (2, 3, 57, 4000):
        x = rng.beta(2, 5, size)
        mean, lo, hi = Moments().add(x).ci95()
        fr = [Fraction(float(v)) for v in x]
        s1, s2, n = sum(fr), sum(f * f for f in fr), len(fr)
        assert mean == float(s1 / n)  # correctly rounded
        var_mean = (n * s2 - s1 * s1) / (n * n * (n - 1))
        h = 1.96 * math.sqrt(float(var_mean))
        assert (lo, hi) == (mean - h, mean + h)  # the variance of the mean rounded once, then its root
        h_np = 1.96 * float(x.std(ddof=1)) / math.sqrt(size)
        assert abs(mean - float(x.mean())) <= 4e-16 and h == pytest.approx(h_np, rel=1e-12)
    assert Moments().add(np.array([0.25])).ci95()[0] == 0.25 and math.isnan(Moments().add(np.array([0.25])).ci95()[1])
    assert all(math.isnan(v) for v in Moments().add(np.array([np.nan])).ci95())
    const = Moments().add(np.full(1000, 0.7))  # no spread: the interval is the point, not rounding noise
    assert const.ci95() == (0.7, 0.7, 0.7)


def test_indicators_count_as_zero_one() -> None:
    flags = np.random.default_rng(15).random(999) < 0.3
    assert Moments().add(flags) == Moments().add(flags.astype(np.float64))


def test_moments_merge_in_any_order() -> None:
    rng = np.random.default_rng(13)
    x = rng.random(5000)
    whole = Moments().add(x)
    for _ in range(5):
        cuts = np.sort(rng.choice(np.arange(1, x.size), size=int(rng.integers(1, 30)), replace=False))
        parts = [Moments().add(a) for a in np.split(x, cuts)]
        rng.shuffle(parts)  # type: ignore[arg-type]
        merged = Moments()
        for m in parts:
            merged.merge(m)
        assert merged == whole and merged.ci95() == whole.ci95()


# ---------------------------------------------------------------- the reports


def _rows(rng: np.random.Generator, B: int, V: int) -> np.ndarray:
    p = np.exp(rng.standard_normal((B, V)) * 2.5)
    return p / p.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A flat dataset of 30 positions over 3 domains and 2 drafts, and its log (8 rows per shard)."""
    pytest.importorskip("pyarrow")
    from mdsd_fast.logs.convert import from_dataset

    d = tmp_path_factory.mktemp("records")
    rng = np.random.default_rng(5)
    p, q = _rows(rng, 30, 300), _rows(rng, 30, 300)
    meta = [dict(domain="abc"[i % 3], draft=("d1", "d2")[i % 2], temperature=1.0) for i in range(30)]
    mf.from_arrays(p, q, meta=meta).save(d / "flat.npz")
    from_dataset(d / "flat.npz", d / "log", rows_per_shard=8)
    return d / "flat.npz", d / "log"


def _keyed(records: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {tuple(r[k] for k in KEY): r for r in records}
    assert len(out) == len(records)
    return out


def test_log_records_independent_of_unit_order_chunks_and_workers(data: tuple[Path, Path], tmp_path: Path) -> None:
    from mdsd_fast.logs import open_logs
    from mdsd_fast.report.log_summary import _summarise
    from mdsd_fast.report.logs import CHUNK_ROWS, LogUnit, log_report, plan_log_units

    base = log_report(data[1], config=CFG, out_dir=tmp_path / "a", progress=False, chunk_rows=1)
    ref = _keyed(base.records)
    assert len({k[0] for k in ref}) == 4  # three domains and the pool
    for kw in (dict(chunk_rows=5), dict(chunk_rows=100, workers=2)):
        other = log_report(data[1], config=CFG, out_dir=tmp_path / "b", progress=False, **kw)  # type: ignore[arg-type]
        np.testing.assert_equal(_keyed(other.records), ref)
    units = [
        dataclasses.replace(u, chunk_rows=CHUNK_ROWS)
        for u in plan_log_units(open_logs(data[1]), CFG, domain=None, draft=None, limit=None)
    ]
    assert len(units) > 6
    for order in (units[::-1], random.Random(3).sample(units, len(units))):
        records, findings, _ = _summarise([LogUnit(**u.__dict__) for u in order], CFG, str(tmp_path / "a"))
        np.testing.assert_equal(_keyed(records), ref)
        assert findings == base.findings


def test_dense_records_independent_of_unit_order(data: tuple[Path, Path], tmp_path: Path) -> None:
    rep = gap_report(data[0], config=CFG, out_dir=tmp_path, progress=False)
    ref = _keyed(rep.records)
    units = plan_units([str(data[0].resolve())], CFG)
    assert len(units) == 6
    for order in (units[::-1], random.Random(4).sample(units, len(units))):
        np.testing.assert_equal(_keyed(_aggregate(order, CFG, str(tmp_path))[0]), ref)


def test_log_records_equal_dense_records(data: tuple[Path, Path], tmp_path: Path) -> None:
    from mdsd_fast.report.logs import log_report

    dense = _keyed(gap_report(data[0], config=CFG, out_dir=tmp_path / "d", progress=False).records)
    logged = _keyed(log_report(data[1], config=CFG, out_dir=tmp_path / "l", progress=False).records)
    assert dense.keys() == logged.keys()
    for k, r in dense.items():  # the log report's simulated standard error is not tracked (NaN or 0)
        for f in ("positions", "mean", "ci_low", "ci_high", "alpha_star", "gap_abs", "exact"):
            assert _same(logged[k][f], r[f]), (k, f, logged[k][f], r[f])


def _same(a: Any, b: Any) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


def test_simulated_verifier_marked_in_every_domain(data: tuple[Path, Path], tmp_path: Path) -> None:
    from mdsd_fast.report.logs import log_report

    cfg = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("rrs",), exact=False, samples=200)
    recs = [
        r for r in log_report(data[1], config=cfg, out_dir=tmp_path, progress=False).records if r["method"] == "rrs"
    ]
    assert len(recs) == 8 and not any(r["exact"] for r in recs)  # 3 domains and the pool, 2 drafts each
    exact = log_report(data[1], config=dataclasses.replace(cfg, exact=True), out_dir=tmp_path / "e", progress=False)
    assert all(r["exact"] for r in exact.records if r["method"] == "rrs")  # the control


# ---------------------------------------------------------------- negative controls: the previous merges


def _chan(parts: list[np.ndarray]) -> tuple[float, float]:
    """The log report's previous merge: (mean, m2) updated unit by unit (Chan et al.), in this order."""
    n, mean, m2 = 0, 0.0, 0.0
    for x in parts:
        k, m = x.size, float(x.mean())
        tot = n + k
        d = m - mean
        mean += d * k / tot
        m2 += float(((x - m) ** 2).sum()) + d * d * n * k / tot
        n = tot
    return mean, m2


def test_previous_merges_depend_on_unit_order() -> None:
    rng = np.random.default_rng(14)
    parts = [rng.random(int(rng.integers(5, 40))) for _ in range(12)]
    assert _chan(parts) != _chan(parts[::-1])  # the previous log records
    cat, rev = np.concatenate(parts), np.concatenate(parts[::-1])
    assert (float(cat.mean()), float(cat.std(ddof=1))) != (float(rev.mean()), float(rev.std(ddof=1)))  # dense
    fwd, back = Moments(), Moments()
    for a, b in zip(parts, parts[::-1], strict=True):
        fwd.merge(Moments().add(a))
        back.merge(Moments().add(b))
    assert fwd == back and fwd.ci95() == back.ci95()
