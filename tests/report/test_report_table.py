"""The report's terminal tables: one per scheme, aligned, only that scheme's verifiers, tokens per
call at α*, the 95% interval clipped to [0, 1]."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from mdsd_fast import from_arrays
from mdsd_fast.report import GapReport, ReportConfig, expected_tokens, gap_report
from mdsd_fast.report.table import markdown
from mdsd_fast.verifiers import verifiers


@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory) -> GapReport:
    rng = np.random.default_rng(7)
    B, V = 12, 8
    p, q = rng.dirichlet(np.ones(V) * 0.5, B), rng.dirichlet(np.ones(V) * 0.5, B)
    meta = [dict(domain="ab"[i % 2], temperature=1.0, prompt_id=f"x{i}") for i in range(B)]
    path = from_arrays(p, q, meta=meta).save(tmp_path_factory.mktemp("table") / "ds.npz", encoding="float64")
    cfg = ReportConfig(schemes=("iid", "wor", "greedy", "topk"), ns=(1, 2, 3), threads=1)
    return gap_report(path, config=cfg)


def _tables(md: str) -> dict[str, list[list[str]]]:
    """scheme -> rows of cells (header first, rule dropped)."""
    out: dict[str, list[list[str]]] = {}
    scheme = ""
    for line in md.splitlines():
        m = re.match(r"scheme (\S+?)(,|:)", line)
        if m:
            scheme = m.group(1)
            out[scheme] = []
        elif line.startswith("| ") and not line.startswith("|-"):
            out[scheme].append([c.strip() for c in line.strip("|").split("|")])
    return out


def test_one_aligned_table_per_scheme_with_its_verifiers(rep: GapReport) -> None:
    md = rep.markdown(domain="all")
    tables = _tables(md)
    assert list(tables) == ["iid", "wor", "greedy", "topk"]
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            assert len({len(r) for r in rows}) == 1, block  # every line of a table as wide
    for scheme, rows in tables.items():
        header = rows[0]
        assert header[:6] == ["T", "draft", "n", "pos", "α* (95% CI)", "tok/call"]
        for name in header[6:]:
            assert scheme in verifiers[name].report_schemes or name == "sd", (scheme, name)
        ran = {r["method"] for r in rep.records if r["scheme"] == scheme and r["kind"] == "verifier"} - {"sd"}
        assert set(header[6:]) - {"sd"} == ran
    # sd at n = 1 is alpha* for the schemes that draw one draft from q: its column is left out there
    assert "sd" not in tables["iid"][0] and "sd" in tables["topk"][0]
    assert max(len(line) for line in md.splitlines()) <= 120


def test_tokens_per_call_and_values_match_the_records(rep: GapReport) -> None:
    rows = _tables(rep.markdown(domain="all"))["wor"]
    header = rows[0]
    for cells in rows[1:]:
        n = int(cells[2])
        (rec,) = [
            r
            for r in rep.records
            if r["domain"] == "all" and r["scheme"] == "wor" and r["n"] == n and r["method"] == "alpha*"
        ]
        assert cells[5] == f"{expected_tokens(rec['mean'], 4):.2f}"
        assert cells[4].startswith(f"{rec['mean']:.4f} (")
        for name, cell in zip(header[6:], cells[6:], strict=True):
            v = [
                r
                for r in rep.records
                if r["domain"] == "all" and r["scheme"] == "wor" and r["n"] == n and r["method"] == name
            ]
            assert (cell == "") == (not v)


def test_interval_is_clipped_to_the_unit_interval(rep: GapReport) -> None:
    records = copy.deepcopy(rep.records)
    for r in records:
        if r["method"] == "alpha*":
            r["ci_low"], r["ci_high"] = -0.25, 1.5
    md = markdown(records, domain="all")
    cells = [row[4] for rows in _tables(md).values() for row in rows[1:]]
    assert cells and all(c.endswith("(0.0000–1.0000)") for c in cells)
    assert "-0.2500" not in md and "1.5000" not in md


def test_max_rows_caps_every_table_together(rep: GapReport) -> None:
    md = rep.markdown(domain="all", max_rows=4)
    assert sum(len(rows) - 1 for rows in _tables(md).values()) == 4
    total = sum(1 for r in rep.records if r["domain"] == "all" and r["method"] == "alpha*")
    assert md.endswith(f"… {total - 4} more rows in the CSV/JSON")
    several = rep.markdown()  # every domain: a domain column
    assert _tables(several)["iid"][0][0] == "domain"
