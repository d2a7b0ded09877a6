"""Profiles engines load (mdsd_fast.trees.profile, `mdsd-fast trees --profile`): Model-Optimizer's
speculation_profile.json (schema 1.0) and vLLM's synthetic_acceptance_rates, checked by the two
projects' own rules (restated in check_speculation_profile / check_vllm_rates), with corrupted
profiles as negative controls."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from mdsd_fast import trees as T
from mdsd_fast.cli import main
from mdsd_fast.trees import profile as P
from mdsd_fast.trees.report import TreeReport, tree_report


def _from_histogram(hist: dict[int, int]) -> P.AcceptanceProfile:
    """A step-count histogram keyed by tokens emitted per step, as Model-Optimizer's benchmark
    records it, turned into the survival function m_d = P(emitted >= d + 1)."""
    total = sum(hist.values())
    K = max(hist) - 1
    m = [sum(v for k, v in hist.items() if k >= d + 1) / total for d in range(1, K + 1)]
    return P.profile_from_marginals(m, key="mo-example")


def test_model_optimizer_worked_examples() -> None:
    # Model-Optimizer's own examples: 40 / 30 / 30 steps emitting 1 / 2 / 3 tokens; a gap at 2
    prof = _from_histogram({1: 40, 2: 30, 3: 30})
    sp = P.speculation_profile(prof)
    assert sp["marginal_accept_rates"] == pytest.approx([0.6, 0.3])
    assert sp["conditional_accept_rates"] == pytest.approx([0.6, 0.5])
    assert sp["mean_accept_length"] == pytest.approx(1.9)
    assert sp["acceptance_length_histogram"] == pytest.approx({"1": 0.4, "2": 0.3, "3": 0.3})
    assert P.check_speculation_profile(sp) == [] and sp["validation"]["mean_consistency"]["passed"]
    gap = P.speculation_profile(_from_histogram({1: 50, 3: 50}))
    assert gap["marginal_accept_rates"] == pytest.approx([0.5, 0.5]) and gap["mean_accept_length"] == 2.0
    assert gap["acceptance_length_histogram"]["2"] == 0.0 and P.check_speculation_profile(gap) == []
    assert list(sp) == list(P.PROFILE_FIELDS)  # field for field, in build_profile's order
    assert P.vllm_speculative_config(prof) == {
        "num_speculative_tokens": 2,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_rates": pytest.approx([0.6, 0.3]),
    }


def test_marginals_are_validated_and_not_mutated() -> None:
    m = np.array([0.8, 0.5, 0.5, 0.0])
    P.profile_from_marginals(m, key="k")
    assert m.flags.writeable and m.tolist() == [0.8, 0.5, 0.5, 0.0]
    for bad, what in (([0.5, 0.6], "increase"), ([0.5, math.nan], "finite"), ([1.2], "finite"), ([], "1..64")):
        with pytest.raises(ValueError, match=what):
            P.profile_from_marginals(bad, key="k")
    with pytest.raises(ValueError, match="accept_length_model"):
        P.profile_from_marginals([0.5], key="k", accept_length_model="guess")


@pytest.fixture(scope="module")
def report() -> TreeReport:
    return tree_report(shapes=["chain4", "b2x4", "kseq4x4", "eagle2k4"], limit=3, threads=1)


def test_shipped_trees_profiles_pass_both_engines_checks(report: TreeReport) -> None:
    profs = P.tree_report_profiles(report)
    rows = {(r["shape"], r["verifier"]): r for r in report.records if r["kind"] != "bound" and r["refused"] == 0}
    assert {tuple(p.key.split("/")) for p in profs} == set(rows)
    for prof in profs:
        shape, v = prof.key.split("/")
        trees = report.trees[shape]
        # exact: the mean over the shape's trees of each tree's exact per-depth profile
        exact = np.zeros(prof.K)
        for t in trees:
            pr = T.tree_value(t, v).profile
            exact[: pr.size] += pr / len(trees)
        np.testing.assert_allclose(prof.marginal, exact, rtol=0, atol=1e-12)
        assert prof.mean_accept_length == pytest.approx(rows[(shape, v)]["tokens_per_call"], abs=1e-12)
        sp = P.speculation_profile(prof)
        assert P.check_speculation_profile(json.loads(json.dumps(sp))) == [], prof.key
        cfg = P.vllm_speculative_config(prof)
        assert P.check_vllm_rates(cfg["synthetic_acceptance_rates"], cfg["num_speculative_tokens"]) == []
        # vLLM's sampler walks conditional rates m_d / m_(d-1); their products give the rates back
        rates = cfg["synthetic_acceptance_rates"]
        cond = [a / b if b > 0 else 0.0 for a, b in zip(rates, [1.0, *rates[:-1]], strict=True)]
        np.testing.assert_allclose(np.cumprod(cond), rates, atol=1e-15)
        assert sum(sp["acceptance_length_histogram"].values()) == pytest.approx(1.0, abs=1e-8)
        assert (sp["marginal_accept_rates"] is None) == (v in ("block", "traversal"))
        per_node_chain = shape == "chain4" and v not in ("block", "traversal")  # a prefix of a longer chain
        assert sp["accept_length_model"] == ("chain_analytic" if per_node_chain else "measured_per_k")
        ci = sp["measurement_conditions"]["marginal_accept_rates_ci95"]
        assert all(0 <= lo <= m <= hi <= 1 for (lo, hi), m in zip(ci, np.round(prof.marginal, 6), strict=True))


def _good() -> dict:
    return P.speculation_profile(P.profile_from_marginals([0.7, 0.4, 0.1], key="k"))


def _corrupt(change):  # type: ignore[no-untyped-def]
    d = copy.deepcopy(_good())
    change(d)
    return d


def _set(**kw):  # type: ignore[no-untyped-def]
    return lambda d: d.update(kw)


@pytest.mark.parametrize(
    "change, needle",
    [
        (_set(marginal_accept_rates=[0.4, 0.7, 0.1]), "non-increasing"),
        (_set(marginal_accept_rates=[0.7, 0.4]), "num_speculative_tokens"),
        (_set(marginal_accept_rates=[0.7, math.nan, 0.1]), "finite probability"),
        (_set(conditional_accept_rates=[0.7, 1.7, 0.25]), "finite probability"),
        (_set(conditional_accept_rates=[0.7, 0.5, 0.25]), "ratios"),
        (_set(mean_accept_length=2.5), "1 + sum"),
        (_set(num_speculative_tokens=2, max_supported_k=2), "num_speculative_tokens"),
        (lambda d: d["acceptance_length_histogram"].update({"2": 0.5}), "per-step mean"),
        (_set(measured=False), "measured"),
        (_set(schema_version="2.0"), "schema_version"),
        (lambda d: d.pop("accept_length_model"), "missing"),
        (_set(speculative_tokens=3), "unknown"),
        (_set(verification_method="block"), "withheld"),
        (lambda d: d["validation"]["marginal_monotonicity"].update(passed=False), "validation"),
    ],
)
def test_corrupted_profiles_fail(change, needle: str) -> None:  # type: ignore[no-untyped-def]
    assert P.check_speculation_profile(_good()) == []
    problems = P.check_speculation_profile(_corrupt(change))
    assert problems and any(needle in s for s in problems), problems


def test_not_a_profile_and_vllm_negative_controls() -> None:
    for doc in ([1, 2, 3], "a string", {"no_version": True}, {"producer": "x", "profiles": []}):
        assert "schema_version" in P.check_speculation_profile(doc)[0]
    assert P.check_vllm_rates([0.7, 0.4, 0.1], 3) == []
    assert any("non-increasing" in s for s in P.check_vllm_rates([0.4, 0.4000001], 2))  # no slack in vLLM
    assert any("length" in s for s in P.check_vllm_rates([0.7, 0.4], 3))
    assert any("[0, 1]" in s for s in P.check_vllm_rates([1.2, 0.4], 2))
    assert any("[0, 1]" in s for s in P.check_vllm_rates([math.nan, 0.4], 2))


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.json"
    prof = P.profile_from_marginals([0.7, 0.4], key="k")
    bundle = P.write_profiles(path, [prof], producer="test")
    assert json.loads(path.read_text()) == bundle and "schema_version" not in bundle
    before = path.read_bytes()

    def boom(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        P.write_profiles(path, [P.profile_from_marginals([0.9], key="k")], producer="test")
    assert path.read_bytes() == before and [f.name for f in tmp_path.iterdir()] == ["p.json"]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["trees", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_cli_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.json"
    base = ["--shapes", "chain4", "--limit", "2", "--verifiers", "sd,block", "--threads", "1", "--no-plots"]
    code, stdout, err = _cli([*base, "--profile", str(out)], capsys)
    assert code == 0, err
    assert f"profiles: 2 written to {out}" in stdout
    entries = {e["key"]: e for e in json.loads(out.read_text())["profiles"]}
    assert set(entries) == {"chain4/sd", "chain4/block"}
    for e in entries.values():
        assert P.check_speculation_profile(e["speculation_profile"]) == []
        assert e["speculation_profile"]["target_model"]["name"].startswith("SmolLM2-135M")
    cfg = entries["chain4/sd"]["vllm_speculative_config"]
    assert cfg["num_speculative_tokens"] == 4 and P.check_vllm_rates(cfg["synthetic_acceptance_rates"], 4) == []
    for bad in (tmp_path, tmp_path / "missing" / "p.json"):
        code, _, err = _cli([*base, "--profile", str(bad)], capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "--profile" in lines[0], err
