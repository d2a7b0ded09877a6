"""The streaming report over a log directory (mdsd_fast.report.logs) and its command line.

* Complete rows give the dense report's per-position alpha* and exact acceptances, bit for bit.
* Truncated rows get intervals that contain the exact value of the rows they were cut from
  (the same positions written twice: whole, and cut to their top 5; a negative control: the
  cut rows' intervals are not all points).
* Nothing depends on the chunk size, the number of workers or Dask; resume reuses every group.
* The command line: filters and --limit, the interval table, one-line errors naming the shard.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import mdsd_fast as mf  # noqa: E402
import mdsd_fast.report.logs  # noqa: E402
from log_shards import shard_positions  # noqa: E402
from mdsd_fast.cli import main  # noqa: E402
from mdsd_fast.logs import LogWriter  # noqa: E402
from mdsd_fast.logs.convert import from_dataset  # noqa: E402
from mdsd_fast.report import ReportConfig, gap_report  # noqa: E402
from mdsd_fast.report.logs import log_report  # noqa: E402

CFG = ReportConfig(schemes=("iid", "wor"), ns=(1, 2), verifiers=("sd", "rrs", "rrs-wor", "optimal"))


def _rows(rng: np.random.Generator, B: int, V: int) -> np.ndarray:
    logits = rng.standard_normal((B, V)) * 2.5  # heavy-tailed, LLM-like rows on a small vocabulary
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def _csr(d: np.ndarray, k: int | None) -> tuple[Any, ...]:
    """Rows of ``d`` as CSR parts: every entry, or each row's top k."""
    order = np.argsort(-d, axis=1, kind="stable")[:, : (k or d.shape[1])]
    ids = np.sort(order, axis=1)
    return np.arange(0, ids.size + 1, ids.shape[1]), ids.ravel(), np.take_along_axis(d, ids, axis=1).ravel()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """12 positions written whole (draft "full") and cut to top 5 (draft "top5"), two domains, 3 shards."""
    d = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(7)
    B, V = 12, 40
    p, q = _rows(rng, B, V), _rows(rng, B, V)
    dom = np.where(np.arange(B) % 2 == 0, "chat", "code")
    with LogWriter(d / "log", V, rows_per_shard=8, dtype="float64") as w:  # exact values
        for name, k in (("full", None), ("top5", 5)):
            meta = dict(
                draft=[name] * B, domain=dom, temperature=[1.0] * B, row_id=np.arange(B) + (0 if k is None else B)
            )
            w.write(_csr(p, k), _csr(q, k), p_complete=k is None, q_complete=k is None, meta=meta)
    return d / "log", p, q


def test_intervals_contain_the_exact_values(mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    log, p, q = mixed
    rep = log_report(log, config=CFG, out_dir=tmp_path / "o", progress=False)
    assert rep.metadata["positions"] == dict(complete=12, truncated=12)
    vals = shard_positions(tmp_path / "o")
    widths = []
    for r in range(12):
        full, cut = vals[r], vals[r + 12]
        for s, n in CFG.pairs():
            a = full[f"alpha/{s}/{n}"]
            assert a == pytest.approx(mf.optimal_acceptance(p[r], q[r], n, s), abs=1e-12)
            lo, hi = cut[f"interval/alpha/{s}/{n}/low"], cut[f"interval/alpha/{s}/{n}/high"]
            assert lo <= a <= hi
            widths.append(hi - lo)
        v = full["verifier/rrs/iid/2/value"]
        assert cut["interval/verifier/rrs/iid/2/low"] <= v <= cut["interval/verifier/rrs/iid/2/high"]
    assert min(widths) > 1e-3  # negative control: the cut rows really are uncertain
    table = [r for r in rep.records if r["kind"] == "interval" and r["draft"] == "top5" and r["domain"] == "all"]
    assert {(r["method"], r["scheme"], r["n"]) for r in table} >= {("alpha* interval", "wor", 2)}
    assert all(r["mean_low"] <= r["mean_high"] for r in table)


def test_no_dependence_on_chunks_workers_or_dask(
    mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = mixed[0]
    base = log_report(log, config=CFG, out_dir=tmp_path / "a", progress=False, chunk_rows=1)
    ref = shard_positions(tmp_path / "a")
    monkeypatch.setattr(mdsd_fast.report.logs, "CELLS", 90)  # union-support batches of 1-3 rows in a chunk of 100
    small = log_report(log, config=CFG, out_dir=tmp_path / "s", progress=False, chunk_rows=100)
    np.testing.assert_equal(shard_positions(tmp_path / "s"), ref)
    np.testing.assert_equal(small.records, base.records)
    two = log_report(log, config=CFG, out_dir=tmp_path / "b", progress=False, chunk_rows=100, workers=2)
    np.testing.assert_equal(shard_positions(tmp_path / "b"), ref)  # NaN (no value) equals NaN here
    np.testing.assert_equal(two.records, base.records)
    assert small.findings == two.findings == base.findings  # exact merges: the same findings


def test_simulated_estimates_do_not_depend_on_chunks(
    mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    """Simulated acceptance draws from streams keyed by each row's row_id, not its place in a chunk."""
    cfg = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("rrs", "kseq"), exact=False, samples=300)
    log_report(mixed[0], config=cfg, out_dir=tmp_path / "a", progress=False, draft="full", chunk_rows=1)
    log_report(mixed[0], config=cfg, out_dir=tmp_path / "b", progress=False, draft="full", chunk_rows=5)
    a, b = shard_positions(tmp_path / "a"), shard_positions(tmp_path / "b")
    np.testing.assert_equal(a, b)
    assert all(a[r]["verifier/rrs/iid/2/exact"] == 0.0 for r in range(12))  # simulated, all 12
    log_report(  # the control: another seed moves the estimates
        mixed[0], config=dataclasses.replace(cfg, seed=1), out_dir=tmp_path / "c", progress=False, draft="full"
    )
    assert any(
        shard_positions(tmp_path / "c")[r]["verifier/rrs/iid/2/value"] != a[r]["verifier/rrs/iid/2/value"]
        for r in range(12)
    )


@pytest.mark.slow  # a Dask LocalCluster takes ~20 s to start on the shared machine
def test_dask_gives_the_same_numbers(mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    log = mixed[0]
    base = log_report(log, config=CFG, out_dir=tmp_path / "a", progress=False, chunk_rows=1)
    ref = shard_positions(tmp_path / "a")
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        dask = log_report(
            log, config=CFG, out_dir=tmp_path / "c", progress=False, chunk_rows=3, scheduler=lc.scheduler_address
        )
    np.testing.assert_equal(shard_positions(tmp_path / "c"), ref)
    np.testing.assert_equal(dask.records, base.records)


def test_resume_reuses_every_group(
    mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = log_report(mixed[0], config=CFG, out_dir=tmp_path, progress=False, draft="full")
    again = log_report(mixed[0], config=CFG, out_dir=tmp_path, progress=False, draft="full", resume=True)
    assert again.metadata["units_reused"] == again.metadata["units"] == first.metadata["units"] > 1
    np.testing.assert_equal(again.records, first.records)
    assert again.findings == first.findings
    assert "resume: reused 4 of 4 groups" in capsys.readouterr().err
    log_report(
        mixed[0], config=dataclasses.replace(CFG, seed=5), out_dir=tmp_path, progress=False, draft="full", resume=True
    )
    assert "resume: reused 0 of 4 groups (4 recomputed: config changed for 4)" in capsys.readouterr().err


def test_complete_rows_equal_the_dense_report(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)  # a flat dataset file in the shipped format ("fixed" encoding)
    p, q = _rows(rng, 10, 3000), _rows(rng, 10, 3000)
    q[:, ::2] = 0  # sparse draft rows: the union support differs from each side's
    meta = [dict(domain=d, draft="small", temperature=0.7) for d in ["a", "b"] * 5]
    mf.from_arrays(p, q / q.sum(axis=1, keepdims=True), meta=meta).save(tmp_path / "flat.npz")
    from_dataset(tmp_path / "flat.npz", tmp_path / "log", rows_per_shard=4)
    cfg = ReportConfig(schemes=("iid", "wor"), ns=(1, 3), verifiers=("sd", "rrs", "kseq", "optimal"))
    log_report(tmp_path / "log", config=cfg, out_dir=tmp_path / "a", progress=False, chunk_rows=4)
    dense = gap_report(tmp_path / "flat.npz", config=cfg, out_dir=tmp_path / "b", progress=False)
    got = shard_positions(tmp_path / "a")
    domains = np.array([m["domain"] for m in meta])
    checked = 0
    for name, arr in dense.positions.items():  # the dense report numbers rows within each group
        rows = np.flatnonzero(domains == name.split("__")[1])[arr["rows"]]
        for i, r in enumerate(rows):
            for k in arr:
                if k.endswith("/value") or k.startswith("alpha/"):
                    assert got[int(r)][k] == arr[k][i], (int(r), k)  # bit for bit
                    checked += 1
    assert checked == 10 * (4 + 4)  # alpha* of 4 (scheme, n) and sd, rrs, kseq, optimal per position


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_report_over_a_log(
    mixed: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(mixed[0])
    args = [
        "report",
        "--dataset",
        log,
        "--schemes",
        "iid",
        "--n",
        "1,2",
        "--verifiers",
        "rrs",
        "--no-plots",
        "--no-progress",
    ]
    code, out, err = _cli([*args, "--out", str(tmp_path / "o"), "--domain", "chat", "--limit", "9"], capsys)
    assert code == 0, err
    assert "Truncated positions (top-k logs): mean interval ends" in out and "| chat |" in out
    assert "| all |" not in out  # one domain left: nothing pooled
    # the first 9 chat rows in storage order: the 6 whole ones, then 3 cut ones
    code, _, _ = _cli([*args, "--out", str(tmp_path / "o"), "--domain", "chat", "--limit", "9", "--resume"], capsys)
    recs = mf.report.GapReport.from_json((tmp_path / "o" / "report.json").read_text()).records
    assert {(r["draft"], r["positions"]) for r in recs if r["method"] == "alpha*" and r["n"] == 1} == {
        ("full", 6),
        ("top5", 0),
    }
    assert {r["positions"] for r in recs if r["method"] == "alpha* interval" and r["n"] == 1} == {3}


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with LogWriter(tmp_path / "log", 10, rows_per_shard=1) as w:
        one = (np.array([0, 2]), np.array([3, 5]), np.array([0.5, 0.5]))
        w.write(one, one, p_complete=True, q_complete=True, meta={})
        w.write(one, one, p_complete=True, q_complete=True, meta={})
    (tmp_path / "good").mkdir()
    for f in (tmp_path / "log").iterdir():
        (tmp_path / "good" / f.name).write_bytes(f.read_bytes())
    shard = tmp_path / "log" / "shard-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-10])
    cases = [
        (["report", "--dataset", str(tmp_path / "log"), "--no-progress"], f"{shard}: shard has"),
        (["report", "--limit", "3"], "--limit: filters a log directory"),
        (
            ["report", "--dataset", str(tmp_path / "log"), "--limit", "0"],
            "argument --limit: expected a positive integer",
        ),
        (["report", "--dataset", str(tmp_path / "good"), "--draft", "nope"], "no positions of"),
        (
            ["convert", "openai", "nope.jsonl", "b.jsonl", "--out", "x", "--vocab-size", "5"],
            "nope.jsonl: no such JSONL file",
        ),
        (["convert", "dataset", "--out", str(tmp_path / "log")], "already holds a log"),
    ]
    for argv, needle in cases:
        code, _, err = _cli([*argv, "--out", str(tmp_path / "o")] if argv[0] == "report" else argv, capsys)
        lines = [x for x in err.splitlines() if x.strip()]
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (argv, err)
        assert needle in lines[0], (argv, lines)
