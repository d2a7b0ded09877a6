"""The gap report's rows as engine profiles (mdsd_fast.report.profile)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.report import ReportConfig, gap_report
from mdsd_fast.report.profile import gap_report_profiles
from mdsd_fast.trees import profile as tp


def test_gap_rows_are_single_position_profiles(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    P, Q = rng.dirichlet(np.ones(12), size=6), rng.dirichlet(np.ones(12) * 0.5, size=6)
    cfg = ReportConfig(schemes=("iid",), ns=(2,), verifiers=("rrs", "optimal"), threads=1)
    rep = gap_report((P, Q), config=cfg, out_dir=tmp_path / "units", progress=False)
    profs = {p.key.rsplit("/", 1)[1]: p for p in gap_report_profiles(rep)}
    assert set(profs) == {"rrs", "optimal"}
    for name, prof in profs.items():
        exact = float(np.mean(mf.acceptance(name, P, Q, 2)))
        assert prof.K == 1 and prof.marginal[0] == pytest.approx(exact, abs=1e-12)
        sp = tp.speculation_profile(prof)
        assert tp.check_speculation_profile(json.loads(json.dumps(sp))) == []
        assert sp["acceptance_length_histogram"] == pytest.approx({"1": 1 - exact, "2": exact}, abs=1e-9)
    alpha = float(np.mean(mf.optimal_acceptance(P, Q, 2, "iid")))
    assert profs["optimal"].marginal[0] == pytest.approx(alpha, abs=1e-12)  # the optimal verifier attains alpha*
    bundle = tp.write_profiles(tmp_path / "gap.json", list(profs.values()), producer="test")
    assert len(json.loads((tmp_path / "gap.json").read_text())["profiles"]) == len(bundle["profiles"]) == 2
