"""What `mdsd-fast report` and `mdsd-fast trees` print and write, read as a person would: every
stdout line at most 100 columns, the gap with one sign in the terminal and the CSV, report.md with
its legend and a link to every plot it wrote, the HiGHS version in the metadata."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mdsd_fast import from_arrays
from mdsd_fast.cli import main
from mdsd_fast.report import GapReport
from mdsd_fast.report.table import GAP

WIDTH = 100


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(11)
    B, V = 16, 8
    p, q = rng.dirichlet(np.ones(V) * 0.5, B), rng.dirichlet(np.ones(V) * 0.5, B)
    meta = [dict(domain="ab"[i % 2], temperature=(0.7, 1.0)[i // 8], prompt_id=f"x{i}") for i in range(B)]
    return from_arrays(p, q, meta=meta).save(tmp_path_factory.mktemp("out") / "ds.npz", encoding="float64")


@pytest.fixture(scope="module")
def report(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("report") / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["report", "--dataset", str(dataset), "--n", "1,2,3", "--out", str(out), "--no-progress"])
    assert code == 0
    return buf.getvalue(), out


def test_every_stdout_line_fits_100_columns(report: tuple[str, Path]) -> None:
    text, _ = report
    long = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not long, long
    assert "Findings on this data:" in text and "α*" in text and "alpha*" not in text  # one spelling


def test_the_gap_has_the_csv_sign_in_the_terminal(report: tuple[str, Path]) -> None:
    text, out = report
    csv = {
        (r["scheme"], r["temperature"], r["draft"], r["n"], r["method"]): r
        for r in GapReport.read_csv((out / "report.csv").read_text())
        if r["domain"] == "all"
    }
    checked = 0
    scheme, header = "", []
    for line in text.split("Findings on this data:")[0].splitlines():
        m = re.match(r"scheme (\S+?)[,: ]", line)
        if m:
            scheme, header = m.group(1), []
        elif line.startswith("| ") and scheme:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not header:
                header = cells
                continue
            t, draft, n = float(cells[0]), cells[1], int(cells[2])
            for name, cell in zip(header, cells, strict=True):
                g = re.fullmatch(r"\d\.\d{4}\*? \(([+-]\d\.\d{4})\)", cell)
                if g and abs(gap := csv[(scheme, t, draft, n, name)]["gap_abs"]) >= 1e-4:
                    assert float(g.group(1)) == pytest.approx(gap, abs=5e-5)
                    assert (g.group(1)[0] == "-") == (gap < 0)
                    checked += 1
    assert checked >= 6


def test_report_md_has_the_legend_and_every_plot(report: tuple[str, Path]) -> None:
    _, out = report
    md = (out / "report.md").read_text()
    assert "## Legend" in md and GAP in " ".join(md.split())
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs  # matplotlib is a test dependency
    for name in pngs:
        assert f"]({name})" in md  # a relative link: renders on GitHub and in the docs
    assert "## Findings" in md and "| check" in md


def test_metadata_names_the_highspy_version(report: tuple[str, Path]) -> None:
    _, out = report
    meta = json.loads((out / "report.json").read_text())["metadata"]
    assert meta["highspy"] == importlib.metadata.version("highspy") != ""


def test_trees_stdout_fits_100_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trees", "--limit", "1", "--threads", "1", "--out", str(tmp_path / "t"), "--no-plots"]) == 0
    text = capsys.readouterr().out
    long = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not long, long
    assert "Findings on this data:" in text and "| shape" in text


def test_a_refusal_note_drops_the_argument_names_it_passed_through() -> None:
    from mdsd_fast.trees._report_table import _note

    note = "refused on 2 of 18 trees: trees: scheme: 'optimal' for 'wor' drafts at this support size"
    assert _note(note) == "refused on 2 of 18 trees: 'optimal' for 'wor' drafts at this support size"
