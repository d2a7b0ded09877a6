"""The report's findings from mergeable per-unit summaries (mdsd_fast.report.merge, mdsd_fast.report.findings).

* The accumulators are exact: a Stat's sum equals the rational sum, its mean is the exactly rounded
  mean, so merging in any order or any split gives the same bits (negative control: plain float
  sums of the same values in two orders differ). The median sketch is within its stated error.
* The dense report's findings are the same when its units are merged in another order, or each unit
  is split in chunks; one changed ulp in one position changes the summary (the test can fail).
* On a log converted from the shipped dataset (`convert dataset`), the streaming report states the
  dense report's findings exactly, whatever the chunk size, the worker count or the unit order.
* On that log cut to the top 20 tokens of every row, every position decided by the findings agrees
  with the complete log's exact values there, no theorem fails, and the counts of decided and
  undecided positions equal an independent recount from the per-position intervals.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from log_shards import shard_positions
from mdsd_fast.report import ReportConfig, gap_report
from mdsd_fast.report.findings import findings, summarise
from mdsd_fast.report.merge import SCALE, SKETCH_ERROR, Sketch, Stat, Summary, exact_sum

CFG = ReportConfig(
    schemes=("iid", "wor", "greedy", "topk"),
    ns=(1, 2),
    verifiers=("sd", "rrs", "kseq", "rrs-wor", "spechub", "greedy", "topk", "optimal"),
)


def test_exact_sum_and_mean_are_exact() -> None:
    rng = np.random.default_rng(0)
    for t in range(100):
        x = rng.standard_normal(int(rng.integers(1, 200))) * 10.0 ** float(rng.integers(-300, 300))
        if t % 4 == 0:
            x = np.r_[x, 5e-324, -5e-324, 0.0, 1e300, -1e300, 2.0**-1022]
        want = sum((Fraction(float(v)) for v in x), Fraction(0))
        assert Fraction(exact_sum(x), 1 << SCALE) == want
        s = Stat().add(x)
        assert s.mean == float(want / x.size)  # exactly rounded
        assert (s.lo, s.hi, s.n) == (x.min(), x.max(), x.size)


def test_merge_does_not_depend_on_order_or_split() -> None:
    x = np.array([1e16, 1.0, -1e16, 3.0, 1e-300, -2.5])
    orders = [x[list(p)] for p in itertools.permutations(range(x.size))]
    assert len({float(o.sum()) for o in orders}) > 1  # the control: float sums depend on the order
    ref = Stat().add(x)
    for o in orders:
        parts = [Stat().add(o[:2]), Stat().add(o[2:5]), Stat().add(o[5:])]
        for perm in itertools.permutations(parts):
            m = Stat()
            for p in perm:
                m.merge(p)
            assert m == ref
    assert ref.sum == float(sum((Fraction(float(v)) for v in x), Fraction(0)))


def test_sketch_median_within_its_error() -> None:
    rng = np.random.default_rng(1)
    for size in (1, 2, 7, 100, 1001, 5000):
        w = rng.random(size) ** 3
        sk = Sketch().add(w)
        assert abs(sk.median() - float(np.median(w))) <= SKETCH_ERROR + 1e-15
        halves = Sketch().add(w[size // 2 :])
        halves.merge(Sketch().add(w[: size // 2]))
        assert halves == sk
    assert math.isnan(Sketch().median())


def _dataset(tmp: Path) -> Path:
    """36 shipped rows (T = 1, drafts skip2 and ngram2, 6 per domain and draft): 6 groups."""
    ds = mf.load_dataset().select(temperature=1.0, draft=["skip2", "ngram2"])
    keep = np.zeros(len(ds), dtype=bool)
    for d in ds.domains:
        for r in ("skip2", "ngram2"):
            keep[np.flatnonzero((ds.column("domain") == d) & (ds.column("draft") == r))[:6]] = True
    return ds[keep].save(tmp / "sub.npz")


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    tmp = tmp_path_factory.mktemp("dense")
    path = _dataset(tmp)
    return path, gap_report(path, config=CFG, out_dir=tmp / "out", progress=False)


def test_dense_findings_do_not_depend_on_unit_order_or_chunks(dense: tuple[Path, Any]) -> None:
    rep = dense[1]
    units = list(rep.positions.values())
    assert len(units) == 6
    sums = [summarise(a, CFG) for a in units]
    ref = Summary()
    for s in sums:
        ref.merge(s)
    assert findings(ref, CFG) == rep.findings
    rng = np.random.default_rng(2)
    for _ in range(3):  # another order, each unit split into chunks of 1-4 positions
        merged = Summary()
        for i in rng.permutation(len(units)):
            a = units[i]
            cuts = np.cumsum(rng.integers(1, 5, size=len(a["rows"])))
            for idx in np.split(np.arange(len(a["rows"])), cuts[cuts < len(a["rows"])]):
                merged.merge(summarise({k: v[idx] if v.ndim else v for k, v in a.items()}, CFG))
        assert merged == ref
        assert findings(merged, CFG) == rep.findings
    bumped = dict(units[0])  # the control: one position one ulp away changes the summary
    bumped["alpha/wor/2"] = bumped["alpha/wor/2"].copy()
    bumped["alpha/wor/2"][0] = np.nextafter(bumped["alpha/wor/2"][0], 2.0)
    other = Summary()
    for a in [bumped, *units[1:]]:
        other.merge(summarise(a, CFG))
    assert other != ref


@pytest.fixture(scope="module")
def logs(dense: tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The dataset converted (complete rows) and the same log cut to each row's top 20 tokens."""
    pytest.importorskip("pyarrow")
    from mdsd_fast.logs import LogWriter, open_logs
    from mdsd_fast.logs.convert import from_dataset

    tmp = tmp_path_factory.mktemp("logs")
    full = from_dataset(dense[0], tmp / "full", rows_per_shard=16)
    logs = open_logs(full)
    with LogWriter(tmp / "top20", logs.vocab_size, rows_per_shard=16) as w:
        for ch in logs.iter_chunks(64):
            sides = []
            for s in ("p", "q"):
                ptr, ids, probs = ch.ptr[s], ch.ids[s], ch.probs[s]
                rows = [np.arange(ptr[i], ptr[i + 1]) for i in range(len(ch))]
                top = [np.sort(r[np.argsort(-probs[r], kind="stable")[:20]]) for r in rows]
                cnt = np.array([t.size for t in top])
                sides.append((np.r_[0, np.cumsum(cnt)], ids[np.concatenate(top)], probs[np.concatenate(top)]))
            meta = {k: ch.meta[k] for k in ("row_id", "draft", "domain", "temperature", "prompt_id", "position")}
            w.write(sides[0], sides[1], p_complete=False, q_complete=False, meta=meta)
    return full, tmp / "top20"


def test_log_findings_equal_the_dense_findings(
    dense: tuple[Path, Any], logs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdsd_fast.report import logs as lr

    rep = lr.log_report(logs[0], config=CFG, out_dir=tmp_path / "a", progress=False, chunk_rows=5)
    assert rep.findings == dense[1].findings  # the same statements and the same numbers, exactly
    assert len(rep.findings) == 10 and all(f["holds"] is not False for f in rep.findings)
    plan = lr.plan_log_units
    monkeypatch.setattr(lr, "plan_log_units", lambda *a, **k: plan(*a, **k)[::-1])
    again = lr.log_report(logs[0], config=CFG, out_dir=tmp_path / "b", progress=False, chunk_rows=64, workers=2)
    assert again.findings == rep.findings  # another unit order, chunk size and worker count


def test_truncated_log_decides_positions_consistently(logs: tuple[Path, Path], tmp_path: Path) -> None:
    from mdsd_fast.report.logs import log_report

    cfg = ReportConfig(schemes=("iid", "wor", "greedy"), ns=(2,), verifiers=("rrs", "greedy", "optimal"))
    log_report(logs[0], config=cfg, out_dir=tmp_path / "full", progress=False)
    rep = log_report(logs[1], config=cfg, out_dir=tmp_path / "cut", progress=False)
    exact, cut = shard_positions(tmp_path / "full"), shard_positions(tmp_path / "cut")
    assert sorted(exact) == sorted(cut) and len(cut) == 36
    by = {f["claim"]: f for f in rep.findings}

    def recount(claim: str, holds: Any, fails: Any, truth: Any) -> None:
        """Independent recount from the intervals; every decided position agrees with the exact value."""
        hold = [r for r in cut if holds(cut[r])]
        fail = [r for r in cut if fails(cut[r])]
        assert all(truth(exact[r]) for r in hold) and not any(truth(exact[r]) for r in fail), claim
        assert by[claim]["truncated"] == dict(
            positions=36, hold=len(hold), fail=len(fail), undecided=36 - len(hold) - len(fail)
        )

    def ends(v: dict[str, float], key: str) -> tuple[float, float]:
        return v[f"interval/{key}/low"], v[f"interval/{key}/high"]

    tol = 1e-9
    recount(
        "α*_wor ≥ α*_iid at every n ≥ 2",
        lambda v: ends(v, "alpha/wor/2")[0] - ends(v, "alpha/iid/2")[1] >= -tol,
        lambda v: ends(v, "alpha/wor/2")[1] - ends(v, "alpha/iid/2")[0] < -tol,
        lambda v: v["alpha/wor/2"] - v["alpha/iid/2"] >= -tol,
    )
    recount(
        "rrs stays below α*_iid",
        lambda v: ends(v, "verifier/rrs/iid/2")[1] - ends(v, "alpha/iid/2")[0] <= tol,
        lambda v: ends(v, "verifier/rrs/iid/2")[0] - ends(v, "alpha/iid/2")[1] > tol,
        lambda v: v["verifier/rrs/iid/2/value"] - v["alpha/iid/2"] <= tol,
    )
    (wins,) = [f for f in rep.findings if f["claim"].startswith("where greedy")]
    decided = {"hold": 0, "fail": 0}
    for other in ("iid", "wor"):
        for r, v in cut.items():
            g, o = ends(v, "alpha/greedy/2"), ends(v, f"alpha/{other}/2")
            truth = exact[r]["alpha/greedy/2"] > exact[r][f"alpha/{other}/2"] + tol
            if g[0] - o[1] > tol:
                assert truth
                decided["hold"] += 1
            elif g[1] - o[0] <= tol:
                assert not truth
                decided["fail"] += 1
    assert {k: wins["truncated"][k] for k in decided} == decided and wins["truncated"]["positions"] == 72
    assert decided["hold"] + decided["fail"] > 0  # power: the top-20 intervals settle some positions
    for f in rep.findings:  # no theorem fails on the truncated rows; the undecided are reported
        if f["holds"] is not None or "undecided" in f:
            assert f["holds"] is not False and f["truncated"]["fail"] == 0, f
            assert ("undecided" in f["evidence"]) and f.get("undecided", 0) == f["truncated"]["undecided"]
    assert any(f["claim"] == "α* of the truncated positions (top-k logs)" for f in rep.findings)
