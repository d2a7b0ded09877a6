"""The lossy frontier report and its command: every record recomputed from the definitions, the
finding's n the smallest that reaches, the files written, the command's errors one line."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import lossy
from mdsd_fast.cli.commands import main
from mdsd_fast.report.frontier import BOUNDS, LOSSLESS, SETTINGS, frontier


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, mf.LMDataset]:
    g = np.random.default_rng(7)
    p = g.dirichlet(np.full(40, 0.2), size=12)
    q = g.dirichlet(np.full(40, 0.2), size=12)
    q[:2, 3:] = 0.0  # drafts with fewer tokens than n
    q /= q.sum(axis=1, keepdims=True)
    return p, q, mf.from_arrays(p, q)


@pytest.fixture(scope="module")
def fr(data):  # type: ignore[no-untyped-def]
    return frontier(data[2], max_n=4, chunk=5)


def test_records_are_the_definitions(data, fr) -> None:  # type: ignore[no-untyped-def]
    p, q, _ = data
    byset = {r["setting"]: r for r in fr.records if r["kind"] == "lossy"}
    assert len(byset) == len(SETTINGS)
    for rule, st, n, drafts in SETTINGS:
        rec = next(r for label, r in byset.items() if label.startswith(rule + " ") and label.endswith(f"{drafts} n={n}")
                   and all(f"{k}={v:g}" in label for k, v in st.items()))  # fmt: skip
        rows = lossy.evaluate_rows(rule, p, q, n, drafts=drafts, **st)
        assert abs(rec["acceptance"] - rows.acceptance.mean()) < 1e-12 and abs(rec["tv"] - rows.tv.mean()) < 1e-12
        se = rows.acceptance.std(ddof=1) / np.sqrt(len(p))
        assert abs(rec["acceptance_se"] - se) < 1e-12
    for n in range(1, 5):
        rec = next(r for r in fr.records if r["name"] == "alpha*" and r["n"] == n)
        assert abs(rec["acceptance"] - mf.optimal_acceptance(p, q, n).mean()) < 1e-12
        rec = next(r for r in fr.records if r["name"] == "alpha*-top" and r["n"] == n)
        top = sum(p[i][np.argsort(-q[i], kind="stable")[:n]][q[i][np.argsort(-q[i], kind="stable")[:n]] > 0].sum()
                  for i in range(len(p)))  # fmt: skip
        assert abs(rec["acceptance"] - top / len(p)) < 1e-12
        for v in LOSSLESS:
            rec = next(r for r in fr.records if r["name"] == v and r["n"] == n)
            assert abs(rec["acceptance"] - mf.acceptance(v, p, q, n).mean()) < 1e-12 and rec["tv"] == 0.0


def test_sglang_lossless_tree_is_alpha_star_of_its_drafts(data) -> None:  # type: ignore[no-untyped-def]
    """Two ways: SGLang's rule at thresholds 1 with the top n of q as children accepts exactly
    alpha*_topk (the best any lossless verifier does with those drafts)."""
    p, q, _ = data
    for n in (1, 2, 3, 5):
        rows = lossy.evaluate_rows("sglang", p, q, n, drafts="top")
        full = (q > 0).sum(axis=1) >= n
        np.testing.assert_allclose(
            rows.acceptance[full], mf.optimal_acceptance(p[full], q[full], n, "topk"), atol=1e-12
        )
        assert (rows.tv == 0).all()


def test_findings_give_the_smallest_n(fr) -> None:  # type: ignore[no-untyped-def]
    for f in fr.findings:
        for name in (*BOUNDS, *LOSSLESS):
            levels = {r["n"]: r["acceptance"] for r in fr.records if r["name"] == name}
            got = f[f"n_{name}"]
            if got is None:
                assert all(a < f["acceptance"] for a in levels.values())
            else:
                assert levels[got] >= f["acceptance"] and all(levels[m] < f["acceptance"] for m in levels if m < got)


def test_files_and_csv(fr, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = fr.write(tmp_path / "out")
    assert sorted(Path(f).name for f in files) == ["frontier.csv", "frontier.md", "frontier.png"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "frontier.csv").read_text())))
    assert len(rows) == len(fr.records) and float(rows[0]["acceptance"]) == pytest.approx(fr.records[0]["acceptance"])
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".tmp")]
    mask = os.umask(0)
    os.umask(mask)
    assert all(Path(f).stat().st_mode & 0o777 == 0o666 & ~mask for f in files)  # not mkstemp's 0600


def test_arguments(data) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="max_n"):
        frontier(data[2], max_n=0)
    with pytest.raises(ValueError, match="limit"):
        frontier(data[2], limit=0)
    with pytest.raises(ValueError, match="chunk"):
        frontier(data[2], chunk=0)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_command(data, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "d.npz"
    data[2].save(path)
    code, out, _ = _run(
        ["frontier", "--dataset", str(path), "--max-n", "2", "--out", str(tmp_path / "o"), "--no-plot"], capsys
    )
    assert code == 0 and "alpha* reaches it at n" in out and (tmp_path / "o" / "frontier.csv").is_file()
    for argv, msg in [
        (["frontier", "--dataset", str(tmp_path / "missing.npz")], "--dataset"),
        (["frontier", "--max-n", "0"], "--max-n"),
        (["frontier", "--max-n", "40"], "--max-n"),
        (["frontier", "--model", "nope"], "--model"),
        (["frontier", "--dataset", str(path), "--model", "gemma3-270m"], "--dataset/--model"),
        (["frontier", "--dataset", str(path), "--out", str(path)], "--out"),
    ]:
        code, _, err = _run(argv, capsys)
        assert code == 2 and msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
