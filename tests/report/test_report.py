"""The gap report: numbers equal direct API calls; CSV/JSON round trips; resume; workers; Dask."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.report import GapReport, ReportConfig, expected_tokens, gap_report

CFG = ReportConfig(ns=(1, 2, 3), samples=500, seed=7, threads=1)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three small dataset shard files cut from the shipped dataset (two drafts, both temperatures)."""
    ds = mf.load_dataset()
    d = tmp_path_factory.mktemp("shards")
    prompts = ds.prompt_ids
    picks = [prompts[0], prompts[6], prompts[12]]
    for k, pid in enumerate(picks):
        sub = ds.select(prompt_id=pid, draft=["skip2", "skip4"])
        sub = sub[: min(len(sub), 12)]
        sub.save(d / f"part{k}.npz")
    return d


def _records(rep: GapReport) -> str:
    """Records in a canonical text form (NaN == NaN, unlike dict equality)."""
    key = ("domain", "temperature", "draft", "scheme", "n", "method")
    recs = sorted(rep.records, key=lambda r: json.dumps([r[k] for k in key], default=str))
    return json.dumps(recs, sort_keys=True, default=float)


def test_report_equals_direct_api_calls() -> None:
    rng = np.random.default_rng(0)
    V, B = 3000, 10
    logits = rng.standard_normal((B, V)) * 2.5
    p = np.exp(logits)
    q = np.exp(logits + rng.standard_normal((B, V)))
    p /= p.sum(1, keepdims=True)
    q /= q.sum(1, keepdims=True)
    cfg = ReportConfig(ns=(1, 2, 3, 4), verifiers=("sd", "rrs", "kseq", "rrs-wor", "spechub", "greedy"), samples=2000)
    rep = gap_report((p, q), config=cfg)
    assert rep.metadata["units"] == 1
    by = {(r["scheme"], r["n"], r["method"]): r for r in rep.records}
    for s in ("iid", "wor", "greedy"):
        for n in (1, 2, 3):
            a = mf.optimal_acceptance(p, q, n, s)
            r = by[(s, n, "alpha*")]
            assert r["mean"] == pytest.approx(a.mean(), abs=1e-13)
            half = 1.96 * a.std(ddof=1) / math.sqrt(B)
            assert r["ci_low"] == pytest.approx(a.mean() - half, abs=1e-12)
            assert r["tokens_per_call"] == pytest.approx(expected_tokens(a.mean(), 4))
    for v, s, n in [
        ("rrs", "iid", 2),
        ("kseq", "iid", 3),
        ("greedy", "greedy", 3),
        ("spechub", "greedy", 2),
        ("rrs-wor", "wor", 2),
        ("sd", "iid", 1),
    ]:
        direct = mf.acceptance(v, p, q, n)
        r = by[(s, n, v)]
        assert r["exact"] is True
        assert r["mean"] == pytest.approx(np.mean(direct), abs=1e-13)
        assert r["gap_abs"] == pytest.approx(by[(s, n, "alpha*")]["mean"] - np.mean(direct), abs=1e-13)
    # rrs-wor at n = 4 and V = 3000 is beyond the exact budget: simulated, with a standard error
    r = by[("wor", 4, "rrs-wor")]
    assert r["exact"] is False and r["sim_se"] > 0
    assert r["mean"] <= by[("wor", 4, "alpha*")]["mean"] + 4 * r["sim_se"]


def test_expected_tokens() -> None:
    assert expected_tokens(0.0, 4) == 1.0
    assert expected_tokens(1.0, 4) == 5.0
    assert expected_tokens(0.5, 4) == pytest.approx(1 + 0.5 + 0.25 + 0.125 + 0.0625)


def test_csv_and_json_round_trip(shards: Path, tmp_path: Path) -> None:
    rep = gap_report(shards, config=CFG, out_dir=tmp_path / "out")
    back = GapReport.from_json(rep.to_json(tmp_path / "r.json"))
    assert json.dumps(back.records, default=float) == json.dumps(rep.records, default=float)
    assert back.findings == rep.findings
    rows = GapReport.read_csv(rep.to_csv(tmp_path / "r.csv"))
    assert len(rows) == len(rep.records)
    for a, b in zip(rows, rep.records, strict=True):
        for k in GapReport.COLUMNS:
            va, vb = a[k], b[k]
            if isinstance(vb, float) and math.isnan(vb):
                assert va is None or math.isnan(va)
            elif isinstance(vb, float):
                assert va == vb  # repr round trip is exact
            elif k == "temperature" and vb is None:
                assert va is None
            else:
                assert va == vb, k
    assert (tmp_path / "r.csv").read_text().startswith("domain,temperature,draft")


def test_workers_and_dask_give_identical_output(shards: Path, tmp_path: Path) -> None:
    one = gap_report(shards, config=CFG, out_dir=tmp_path / "w1")
    two = gap_report(shards, config=CFG, out_dir=tmp_path / "w2", workers=2)
    assert _records(one) == _records(two)
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        dk = gap_report(shards, config=CFG, out_dir=tmp_path / "dask", scheduler=cl.scheduler_address)
    assert _records(one) == _records(dk)
    assert one.findings == dk.findings


def test_resume_after_a_killed_run_gives_identical_output(shards: Path, tmp_path: Path) -> None:
    args = ["--dataset", str(shards), "--n", "1,2,3", "--samples", "500", "--seed", "7", "--no-plots", "--no-progress"]
    full = tmp_path / "full"
    subprocess.run(
        [sys.executable, "-m", "mdsd_fast", "report", *args, "--out", str(full)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    part = tmp_path / "part"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mdsd_fast", "report", *args, "--out", str(part)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if len(list((part / "shards").glob("*.npz"))) >= 1:
            break
        time.sleep(0.05)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = sorted(p.name for p in (part / "shards").glob("*.npz") if not p.name.startswith("."))
    res = subprocess.run(
        [sys.executable, "-m", "mdsd_fast", "report", *args, "--out", str(part), "--resume"],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "gap report" in res.stdout
    a = json.loads((full / "report.json").read_text())
    b = json.loads((part / "report.json").read_text())
    assert json.dumps(a["records"]) == json.dumps(b["records"])
    assert a["findings"] == b["findings"]
    total = len(list((full / "shards").glob("*.npz")))
    assert b["metadata"]["units_computed"] == total - len(done_before)


def test_plots_are_written(shards: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rep = gap_report(shards, config=CFG, out_dir=tmp_path / "out")
    files = rep.plot(tmp_path / "plots")
    names = sorted(os.path.basename(f) for f in files)
    # two temperatures: no temperature figure (a segment per series answers nothing)
    assert names == ["acceptance_vs_n.png", "gap_per_verifier.png", "wor_minus_iid.png"]
    for f in files:
        assert Path(f).stat().st_size > 10_000
    three = [dict(r, temperature=1.5) for r in rep.records if r["temperature"] == 1.0]
    more = GapReport(records=rep.records + three, findings=[], metadata={}, positions=rep.positions)
    assert "acceptance_vs_temperature.png" in {os.path.basename(f) for f in more.plot(tmp_path / "three")}


def test_plots_read_with_one_scheme_and_one_n(shards: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from mdsd_fast.report.plots import QUESTIONS

    cfg = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("rrs", "optimal"), threads=1)
    rep = gap_report(shards, config=cfg, out_dir=tmp_path / "out")
    files = [os.path.basename(f) for f in rep.plot(tmp_path / "plots")]
    assert files == ["acceptance_vs_n.png", "gap_per_verifier.png"] and set(files) <= set(QUESTIONS)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="ns: every n"):
        ReportConfig(ns=(0,))
    with pytest.raises(ValueError, match="verifiers: unknown verifier 'nope'"):
        ReportConfig(verifiers=("nope",))
    with pytest.raises(ValueError, match="schemes: unknown scheme"):
        ReportConfig(schemes=("bogus",))
