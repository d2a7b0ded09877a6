"""The report's terminal text: one table per scheme, aligned, only that scheme's verifiers, tokens
per call at α*, α* ± the half-width of its 95% interval, the gap with the CSV's sign, every line at
most 100 columns (tables, legend, findings)."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from mdsd_fast import from_arrays
from mdsd_fast.report import GapReport, ReportConfig, expected_tokens, gap_report
from mdsd_fast.report.table import GAP, findings_text, legend, markdown, temperatures
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


def _cells(md: str) -> dict[str, list[list[str]]]:
    """scheme -> rows of cells, the continuation tables' columns joined to their rows by key."""
    out: dict[str, dict[tuple[str, ...], list[str]]] = {}
    headers: dict[str, list[str]] = {}
    scheme, header = "", []
    for line in md.splitlines():
        m = re.match(r"scheme (\S+?)(,|:| \()", line)
        if m:
            scheme, header = m.group(1), []
        elif line.startswith("| ") and not line.startswith("|-"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not header:
                header = cells
                key = header.index("n") + 1
                headers[scheme] = headers.get(scheme, header[:key]) + list(header[key:])
                continue
            row = out.setdefault(scheme, {}).setdefault(tuple(cells[:key]), [])
            row += cells if not row else cells[key:]
    return {s: [headers[s], *rows.values()] for s, rows in out.items()}


def test_one_aligned_table_per_scheme_with_its_verifiers(rep: GapReport) -> None:
    md = rep.markdown(domain="all")
    tables = _cells(md)
    assert list(tables) == ["iid", "wor", "greedy", "topk"]
    for block in md.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            assert len({len(r) for r in rows}) == 1, block  # every line of a table as wide
    for scheme, rows in tables.items():
        header = rows[0]
        assert header[:6] == ["T", "draft", "n", "pos", "α* ± 95% CI", "tok/call"]
        for name in header[6:]:
            assert scheme in verifiers[name].report_schemes or name == "sd", (scheme, name)
        ran = {r["method"] for r in rep.records if r["scheme"] == scheme and r["kind"] == "verifier"}
        at = re.search(rf"At α\*_{scheme} on every row .*?: (.*)\.", md.split(f"scheme {scheme}")[1])
        noted = set(at.group(1).split(", ")) if at else set()
        assert set(header[6:]) | noted == ran and not set(header[6:]) & noted  # a column or a note, never both
    # sd at n = 1 is alpha* for the schemes that draw one draft from q: a note there, a reference column under topk
    assert "sd" not in tables["iid"][0] and "sd" in tables["topk"][0]
    assert "sd is a reference here" in md
    assert max(len(line) for line in md.splitlines()) <= 100


def test_tokens_per_call_gap_and_interval_match_the_records(rep: GapReport) -> None:
    csv = {(r["scheme"], r["n"], r["method"]): r for r in GapReport.read_csv(rep.to_csv()) if r["domain"] == "all"}
    seen = 0
    for scheme, rows in _cells(rep.markdown(domain="all")).items():
        header = rows[0]
        for cells in rows[1:]:
            n = int(cells[2])
            rec = csv[(scheme, n, "alpha*")]
            assert cells[5] == f"{expected_tokens(rec['mean'], 4):.2f}"
            assert cells[4] == f"{rec['mean']:.4f} ±{(rec['ci_high'] - rec['ci_low']) / 2:.4f}"
            for name, cell in zip(header[6:], cells[6:], strict=True):
                v = csv.get((scheme, n, name))
                assert (cell == "") == (v is None)
                if v is not None:  # the gap printed is the CSV's gap_abs, sign included
                    m = re.fullmatch(r"(\d\.\d{4})\*? \(([+-]\d\.\d{4})\)", cell)
                    assert m, cell
                    assert float(m.group(1)) == pytest.approx(v["mean"], abs=5e-5)
                    assert float(m.group(2)) == pytest.approx(v["gap_abs"], abs=5e-5)
                    if abs(v["gap_abs"]) >= 1e-4:
                        assert (m.group(2)[0] == "+") == (v["gap_abs"] > 0)
                        seen += 1
    assert seen >= 4


def test_negative_gap_keeps_its_sign() -> None:
    rec = dict(domain="d", temperature=1.0, draft="x", scheme="topk", n=1, kind="bound", method="alpha*",
               exact=True, positions=3, mean=0.3, ci_low=0.2, ci_high=0.4, gap_abs=0.0, tokens_per_call=1.4)  # fmt: skip
    sd = dict(rec, kind="verifier", method="sd", mean=0.5, gap_abs=-0.2)
    md = markdown([rec, sd])
    assert "0.5000 (-0.2000)" in md and "0.3000 ±0.1000" in md


def test_temperatures_print_alike() -> None:
    assert list(temperatures([0.7, 1.0]).values()) == ["0.7", "1.0"]
    assert list(temperatures([1.0, 2.0]).values()) == ["1", "2"]
    assert list(temperatures([0.25, 1.0, None]).values()) == ["0.25", "1.00", ""]


def test_wide_tables_continue_within_100_columns(rep: GapReport) -> None:
    records = copy.deepcopy(rep.records)
    for r in records:  # simulated: no verifier is at α* on every row, every column stays
        if r["kind"] == "verifier":
            r["exact"] = False
    md = markdown(records)  # every domain: a domain column too
    assert "scheme iid (continued):" in md
    assert max(len(line) for line in md.splitlines()) <= 100
    rows = _cells(md)["iid"]
    assert rows[0][0] == "domain" and {"rrs", "kseq", "optimal"} <= set(rows[0])
    assert all(len(r) == len(rows[0]) for r in rows)


def test_legend_and_findings_fit_100_columns(rep: GapReport) -> None:
    lines = legend(4, 4000, pooled=True) + findings_text(rep.findings).splitlines()
    assert max(len(line) for line in lines) <= 100
    assert " ".join(legend(4, 4000)).count(GAP) == 1  # the gap defined once
    text = findings_text(rep.findings)
    for f in rep.findings:
        assert f"- {f['claim'][:30]}" in text.replace("\n  ", " ")
    assert "| check" in text and "n = 2" in text  # the mean gaps per n in a table


def test_max_rows_caps_every_table_together(rep: GapReport) -> None:
    md = rep.markdown(domain="all", max_rows=4)
    assert sum(len(rows) - 1 for rows in _cells(md).values()) == 4
    total = sum(1 for r in rep.records if r["domain"] == "all" and r["method"] == "alpha*")
    assert md.endswith(f"… {total - 4} more rows in the CSV/JSON")
    several = rep.markdown()  # every domain: a domain column
    assert _cells(several)["iid"][0][0] == "domain"


def test_interval_findings_render_as_a_table() -> None:
    # the shape findings.findings gives the cut-sample intervals (values per "scheme/n", wor wins)
    ends = dict(positions=40, mean_low=0.61, mean_high=0.66, width_p50=0.031, width_max=0.2, mean_alpha=0.63)
    f = dict(
        claim="α* of the uncut rows (the sample is cut to its top tokens)",
        holds=None,
        evidence="…",
        values={"iid/2": ends, "wor/2": dict(ends, mean_low=0.64), "wor>iid/2": 0.45},
    )
    checked = dict(claim="rrs stays below α*_iid", holds=None, evidence="…", undecided=3,
                   truncated=dict(positions=10, hold=6, fail=1, undecided=3),
                   values=dict(pairs=10, above=0, below=7, exact=True, mean_gap={"2": 0.02}, at_bound={}))  # fmt: skip
    text = findings_text([f, checked])
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "| iid    | 2 |  40 |             0.6300 | [0.6100, 0.6600] |" in text
    assert "(wor low > iid high) at n = 2: 45%" in text.replace("\n  ", " ")
    assert "**undecided at 3 truncated pairs**" in text and "6 of 10 hold over the whole interval" in text
