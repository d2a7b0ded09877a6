"""mdsd_fast.audit: registry verifiers pass, the published bugs are caught (and by which case),
the false-alarm rate and the stated power hold, user errors give one clear line."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import audit_controls as ac
import mdsd_fast as mf
from mdsd_fast.audit import AuditCase, AuditError, registry_verifier, suite
from mdsd_fast.audit._special import binom_sf, chi2_sf, ncx2_sf
from mdsd_fast.audit._stats import detectable_tv, holm, law_test
from mdsd_fast.audit._suite import unsupported
from mdsd_fast.cli import main

SMALL = [c for c in suite() if c.V <= 8]

# (registry name, verifier scheme, audit scheme, n, small cases only)
REGISTRY = [
    ("sd", None, "iid", 1, False),
    ("rrs", None, "iid", 2, False),
    ("rrs", None, "iid", 3, False),
    ("kseq", None, "iid", 2, False),
    ("kseq", None, "iid", 4, False),
    ("optimal", None, "iid", 2, False),
    ("optimal", None, "iid", 3, False),
    ("optimal", "wor", "wor", 2, True),
    ("rrs-wor", None, "wor", 2, False),
    ("rrs-wor", None, "wor", 3, False),
    ("sweep", None, "wor", 2, False),
    ("sweep", None, "wor", 3, False),
    ("greedy", None, "greedy", 2, False),
    ("greedy", None, "greedy", 3, False),
    ("spechub", None, "spechub", 2, False),
    ("topk", None, "topk", 2, False),
    ("topk", None, "topk", 3, False),
    ("rrs", "top1+iid", "top1+iid", 2, False),
    ("kseq", "top1+iid", "top1+iid", 3, False),
    ("optimal", "top1+iid", "top1+iid", 3, False),
    ("rrs-wor", "top1+wor", "top1+wor", 3, False),
    ("sweep", "top2+wor", "top2+wor", 3, False),
    ("optimal-lp", "topk", "topk", 2, True),
    ("optimal-lp", "iid", "iid", 2, True),
    ("optimal-lp", "wor", "wor", 2, True),
    ("optimal-lp", "greedy", "greedy", 2, True),
]


@pytest.mark.parametrize(("name", "vscheme", "scheme", "n", "small"), REGISTRY)
def test_registry_verifiers_pass(name: str, vscheme: str | None, scheme: str, n: int, small: bool) -> None:
    cases = [c for c in SMALL if unsupported(scheme, c.q, n) is None] if small else None
    res = mf.audit(registry_verifier(name, scheme=vscheme), scheme, n, cases=cases, rng=0)
    assert res.lossless, str(res)
    assert all(c.verdict == "pass" and c.impossible == 0 for c in res.cases)
    # every exact bound holds on the estimate within its noise, and the stated power is real
    assert all(c.acceptance <= c.alpha_star + 5 * c.acceptance_se + 1e-9 for c in res.cases)
    assert max(c.tv_detectable for c in res.cases if c.V <= 8) < 0.025


# (verifier, scheme, cases that must fail, cases that must pass)
CONTROLS = [
    ("naive-residual", ac.naive_residual, "iid", {"peaked-q", "q-zero-p-pos", "llm-like-4096"}, {"equal", "one-hot-p"}),
    ("eagle-duplicate-skip", ac.eagle_duplicate_skip, "iid", {"llama-index-sub"}, {"equal", "flat", "llm-like-4096"}),
    ("llama-index-subtraction", ac.llama_index_subtraction, "iid", {"llama-index-sub", "zeros"}, {"eagle-dup-skip"}),
    ("ratio-on-topk-drafts", ac.ratio_on_deterministic, "topk", {"ties", "flat", "llm-like-4096"}, set()),
    ("ratio-on-greedy-drafts", ac.ratio_on_deterministic, "greedy", {"ties", "flat", "llm-like-4096"}, set()),
    ("first-draft", ac.first_draft, "iid", {"eagle-dup-skip", "disjoint", "llm-like-4096"}, {"equal"}),
    ("rrs-top50-q", ac.truncated_q(50), "iid", {"llm-like-4096"}, {c.name for c in SMALL}),
]


@pytest.mark.parametrize(
    ("label", "verify", "scheme", "must_fail", "must_pass"), CONTROLS, ids=[c[0] for c in CONTROLS]
)
def test_negative_controls_are_flagged(
    label: str, verify: ac.Batch, scheme: str, must_fail: set[str], must_pass: set[str]
) -> None:
    res = mf.audit(verify, scheme, 2, rng=0, batched=True)
    failed = {c.name for c in res.failed}
    print(f"{label}: flagged by {sorted(failed)}")
    assert not res.lossless
    assert must_fail <= failed, (label, failed)
    assert not (must_pass & failed), (label, failed)


def test_mixed_drafts_verified_as_iid_are_flagged() -> None:
    """rrs told its drafts are i.i.d. while the top one of q is always drafted: not lossless."""
    res = mf.audit(registry_verifier("rrs"), "top1+iid", 2, rng=0)
    assert not res.lossless and {"eagle-dup-skip", "ties", "llm-like-4096"} <= {c.name for c in res.failed}


def test_first_draft_is_caught_by_the_acceptance_bound() -> None:
    res = mf.audit(ac.first_draft, "iid", 2, rng=0, batched=True)
    over = [c for c in res.cases if c.acceptance_pvalue_adjusted <= res.alpha]
    assert {"eagle-dup-skip", "peaked-q", "one-hot-p"} <= {c.name for c in over}
    assert all(c.acceptance > c.alpha_star and "proves a bug" in " ".join(c.reasons) for c in over)


def test_ports_reproduce_the_published_counterexamples() -> None:
    """The ports give the published output laws (0.3333, 0.3533, 0.3133) and TV 0.185 (n = 2)."""
    g = np.random.default_rng(5)
    S = 400_000
    cases = {c.name: c for c in suite(large=False)}
    for name, verify, want_tv, want in [
        ("eagle-dup-skip", ac.eagle_duplicate_skip, None, [1 / 3, 0.3533, 0.3133]),
        ("llama-index-sub", ac.llama_index_subtraction, 0.185, None),
    ]:
        c = cases[name]
        drafts = g.choice(c.V, size=(S, 2), p=c.q)
        law = np.bincount(verify(c.p, c.q, drafts, g), minlength=c.V) / S
        if want is not None:
            assert np.abs(law - want).max() < 0.004, law
        if want_tv is not None:
            assert abs(0.5 * np.abs(law - c.p).sum() - want_tv) < 0.004, law


def test_one_position_contract_and_custom_drafter() -> None:
    """The per-call path (no verify_batch) and a user drafter (split-half certificate bound)."""
    cases = [c for c in SMALL if c.name in ("eagle-dup-skip", "zeros", "ties")]
    reg = registry_verifier("rrs")

    def one(p: np.ndarray, q: np.ndarray, drafts: np.ndarray, rng: np.random.Generator) -> int:
        return reg(p, q, drafts, rng)

    assert mf.audit(one, "iid", 2, cases=cases, samples=1500, rng=1).lossless

    def first(p: np.ndarray, q: np.ndarray, drafts: np.ndarray, rng: np.random.Generator) -> int:
        return int(drafts[0])

    assert not mf.audit(first, "iid", 2, cases=cases, samples=1500, rng=1).lossless

    def draft(q: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(q.size, size=n, p=q)

    ok = mf.audit(reg, draft=draft, n=2, cases=cases, samples=4000, rng=2)
    assert ok.lossless and ok.scheme == "custom", str(ok)
    bad = mf.audit(ac.first_draft, draft=draft, n=2, cases=cases, samples=4000, rng=2, batched=True)
    assert not bad.lossless
    assert any(c.acceptance_pvalue_adjusted <= bad.alpha for c in bad.cases)  # the split bound catches it


def test_seeded_audits_repeat() -> None:
    a = mf.audit(registry_verifier("kseq"), "iid", 2, cases=SMALL, samples=3000, rng=11)
    b = mf.audit(registry_verifier("kseq"), "iid", 2, cases=SMALL, samples=3000, rng=11)
    assert [(c.statistic, c.acceptance) for c in a.cases] == [(c.statistic, c.acceptance) for c in b.cases]


def test_false_alarm_rate_matches_the_nominal_rate() -> None:
    """A correct verifier whose acceptance sits exactly at alpha* (both tests at their null), 400
    seeds at alpha = 0.05: the measured family-wise rate is near 0.05 (3 SD: 0.017-0.083)."""
    case = [c for c in SMALL if c.name == "eagle-dup-skip"]
    v = registry_verifier("optimal")
    runs = 400
    alarms = sum(not mf.audit(v, "iid", 2, cases=case, samples=1000, rng=s, alpha=0.05).lossless for s in range(runs))
    rate = alarms / runs
    print(f"false-alarm rate: {rate:.4f} at nominal 0.05 over {runs} audits")
    assert 0.05 - 3 * math.sqrt(0.05 * 0.95 / runs) < rate < 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)


def test_detectable_tv_has_the_stated_power() -> None:
    """At TV = the stated detectable TV, in the least detectable direction (mass d/2 moved between
    halves of a uniform p: chi-square divergence exactly 4 d^2), the test rejects >= 90% of the time."""
    S, level, reps = 20_000, 1e-3 / 30, 300
    p = np.full(4, 0.25)
    d = detectable_tv(3, S, level)
    alt = p + np.array([1, 1, -1, -1]) * d / 2
    g = np.random.default_rng(3)
    power = np.mean([law_test(p, g.multinomial(S, alt), level).pvalue <= level for _ in range(reps)])
    null = np.mean([law_test(p, g.multinomial(S, p), level).pvalue <= level for _ in range(reps)])
    print(f"detectable TV {d:.4f} at S = {S}: simulated power {power:.3f}, null rejections {null:.3f}")
    assert 0.5 * np.abs(alt - p).sum() == pytest.approx(d)
    assert power >= 0.86 and null <= 0.01  # 0.9 less 2.4 SD of 300 reps


def test_tv_interval_covers() -> None:
    p = np.array([0.5, 0.3, 0.2])
    alt = np.array([0.45, 0.33, 0.22])
    g = np.random.default_rng(4)
    tv = 0.5 * np.abs(alt - p).sum()
    hits = [law_test(p, g.multinomial(5000, alt), 1e-3) for _ in range(200)]
    assert np.mean([t.tv_ci[0] <= tv <= t.tv_ci[1] for t in hits]) >= 0.95


def test_special_functions_against_direct_sums() -> None:
    for df, x in [(2, 3.0), (4, 9.5), (10, 2.0), (40, 70.0)]:
        k = df // 2
        direct = math.exp(-x / 2) * sum((x / 2) ** j / math.factorial(j) for j in range(k))
        assert chi2_sf(x, df) == pytest.approx(direct, rel=1e-11)
    for k, n, p in [(5, 20, 0.3), (90, 100, 0.8), (1, 7, 0.01), (3000, 10000, 0.29)]:
        terms = [
            math.lgamma(n + 1)
            - math.lgamma(j + 1)
            - math.lgamma(n - j + 1)
            + j * math.log(p)
            + (n - j) * math.log1p(-p)
            for j in range(k, n + 1)
        ]
        direct = math.fsum(math.exp(t) for t in terms)
        assert binom_sf(k, n, p) == pytest.approx(direct, rel=1e-9)
    g = np.random.default_rng(0)
    draws = g.noncentral_chisquare(3, 8.0, size=200_000)
    assert ncx2_sf(10.0, 3, 8.0) == pytest.approx(np.mean(draws > 10.0), abs=0.004)
    assert holm(np.array([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_user_errors_name_the_case() -> None:
    case = [AuditCase("mine", np.array([0.5, 0.5]), np.array([0.5, 0.5]))]

    def raises(p: np.ndarray, q: np.ndarray, d: np.ndarray, g: np.random.Generator) -> int:
        raise ZeroDivisionError("oops")

    def pair(p: np.ndarray, q: np.ndarray, d: np.ndarray, g: np.random.Generator) -> object:
        return mf.verify("rrs", p, q, d, rng=g)

    def writes(p: np.ndarray, q: np.ndarray, d: np.ndarray, g: np.random.Generator) -> int:
        p[0] = 1.0
        return 0

    for fn, text in [(raises, "raised ZeroDivisionError: oops"), (pair, "expected an int"), (writes, "read-only")]:
        with pytest.raises(AuditError, match=text) as info:
            mf.audit(fn, cases=case, samples=200)
        assert "'mine'" in str(info.value)
    with pytest.raises(AuditError, match="returned True"):
        mf.audit(lambda p, q, d, g: True if d[0] else 0, cases=case, samples=200)
    with pytest.raises(AuditError, match=r"token ids are in \[0, 2\)"):
        mf.audit(lambda p, q, d, g: 2, cases=case, samples=200)
    with pytest.raises(AuditError, match="draft returned"):
        mf.audit(lambda p, q, d, g: 0, draft=lambda q, n, g: [0], cases=case, samples=200)
    with pytest.raises(ValueError, match="scheme"):
        mf.audit(lambda p, q, d, g: 0, "beam")
    with pytest.raises(TypeError, match="samples"):
        mf.audit(lambda p, q, d, g: 0, samples=True)
    with pytest.raises(ValueError, match="distinct tokens"):
        mf.audit(lambda p, q, d, g: 0, "wor", 2, cases=[(np.array([0.5, 0.5]), np.array([1.0, 0.0]))])
    with pytest.raises(ValueError, match=r"cases\[0\].p"):
        mf.audit(lambda p, q, d, g: 0, cases=[(np.array([0.5, 0.6]), np.array([0.5, 0.5]))])


def _module(tmp_path: Path) -> None:
    (tmp_path / "my_engine.py").write_text(
        "import mdsd_fast as mf\n"
        "good = mf.audit.registry_verifier('rrs')\n"
        "def first(p, q, drafts, rng):\n    return drafts[0]\n"
        "def boom(p, q, drafts, rng):\n    raise RuntimeError('engine crashed')\n"
    )


def test_cli_verdicts_and_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["audit", "my_engine:good", "--samples", "1000"]) == 0
    out = capsys.readouterr().out
    assert "| llm-like-4096 |" in out and out.strip().splitlines()[-1].startswith("LOSSLESS")
    assert main(["audit", "my_engine:first", "--samples", "1000"]) == 1
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("NOT LOSSLESS")
    for spec, text in [
        ("my_engine:boom", "engine crashed on case 'eagle-dup-skip'"),
        ("my_engine:nope", "no attribute"),
    ]:
        assert main(["audit", spec]) == 2
        err = capsys.readouterr().err
        assert text in err and len(err.strip().splitlines()) == 1


def test_cli_broken_path_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mdsd_fast", "audit", "no_such_module:verify"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(mf.__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "mdsd-fast audit: error: verify: cannot import 'no_such_module' "
        "(ModuleNotFoundError: No module named 'no_such_module')"
    )
