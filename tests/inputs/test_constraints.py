"""mdsd_fast.constraints: logits -> the distribution an engine samples from.

Three checks of the rules, each able to fail on its own:

* engine "hf" against transformers' own warpers (Temperature, TopK, TopP, MinP, in the order
  ``generate()`` builds them), and engine "vllm" against the same warpers wherever the two
  engines define the same rule (everything but min-p together with top-p);
* engines "vllm" and "sglang" against independent per-row references written here from the
  engines' source (docs/guide/inputs.md links the files), on random logits with ties and -inf;
* the documented differences between engines, on small hand-made rows where the answer is
  known exactly.

Plus the EAGLE-3 vocabulary map, the one hook that lets every public function take Logits, and
the argument errors. Deterministic (no sampling), so no power statement is needed.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast import Logits, constraints

INF = math.inf


def _logits(rng: np.random.Generator, B: int, V: int, *, ties: bool, masked: bool) -> np.ndarray:
    z = rng.normal(size=(B, V)) * 2.0
    if ties:
        z = np.round(z * 2.0) / 2.0  # a half-integer grid: many exactly tied logits
    if masked:
        z[rng.random(size=(B, V)) < 0.2] = -INF
        z[:, rng.integers(V)] = 1.0  # every row keeps a finite logit
    return z


# ---- independent references (plain Python, one row at a time) -------------------------------


def _softmax_row(z: list[float], alive: list[bool]) -> list[float]:
    m = max(x for x, a in zip(z, alive, strict=True) if a)
    e = [math.exp(x - m) if a else 0.0 for x, a in zip(z, alive, strict=True)]
    s = math.fsum(e)
    return [x / s for x in e]


def _one_hot(z: list[float]) -> list[float]:
    best = max(range(len(z)), key=lambda i: (z[i], -i))  # the largest, lowest id among ties
    return [1.0 if i == best else 0.0 for i in range(len(z))]


def _ref_vllm(row: np.ndarray, T: float, k: int | None, top_p: float | None, min_p: float | None) -> list[float]:
    """vLLM V1: greedy below 1e-5; else z / T, min-p, top-k (ties with the k-th kept), top-p
    over the survivors with the most probable first (ties: the higher id counts as more probable,
    the reverse of a stable ascending sort), a token kept while the mass before it is < top_p."""
    z = [float(x) for x in row]
    if T < 1e-5:
        return _one_hot(z)
    z = [x / T for x in z]
    alive = [x > -INF for x in z]
    if min_p:
        pr = _softmax_row(z, alive)
        alive = [a and pr[i] >= max(pr) * min_p for i, a in enumerate(alive)]
    if k is not None and k < sum(alive):
        kth = sorted((z[i] for i in range(len(z)) if alive[i]), reverse=True)[k - 1]
        alive = [a and z[i] >= kth for i, a in enumerate(alive)]
    if top_p is not None and top_p < 1:
        pr = _softmax_row(z, alive)
        before = 0.0
        for i in sorted((i for i in range(len(z)) if alive[i]), key=lambda i: (z[i], i), reverse=True):
            alive[i] = before < top_p
            before += pr[i]
    return _softmax_row(z, alive)


def _ref_sglang(row: np.ndarray, T: float, k: int | None, top_p: float | None, min_p: float | None) -> list[float]:
    """SGLang: greedy below 1e-6; else one descending order of the full distribution (ties:
    lower id first), a token kept iff its rank < k, the mass before it <= top_p, and its
    probability >= min_p times the largest."""
    z = [float(x) for x in row]
    if T < 1e-6:
        return _one_hot(z)
    z = [x / T for x in z]
    pr = _softmax_row(z, [x > -INF for x in z])
    keep = [False] * len(z)
    before = 0.0
    for rank, i in enumerate(sorted(range(len(z)), key=lambda i: (-pr[i], i))):
        keep[i] = (k is None or rank < k) and (top_p is None or before <= top_p)
        keep[i] = keep[i] and (min_p is None or pr[i] >= max(pr) * min_p)
        before += pr[i]
    return _softmax_row(z, keep)


def _assert_rows(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(ours > 0, ref > 0, err_msg=f"{what}: kept tokens differ")
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12, err_msg=what)


SETTINGS = list(itertools.product((1.0, 0.6, 1.7), (None, 1, 4, 30), (None, 0.35, 0.9), (None, 0.05, 0.4)))


def _random_settings(
    rng: np.random.Generator, count: int
) -> list[tuple[float, int | None, float | None, float | None]]:
    """Settings off the grid: any temperature, k, top_p in (0, 1], min_p in [0, 1]."""
    out = []
    for _ in range(count):
        k = int(rng.integers(1, 70)) if rng.random() < 0.7 else None
        top_p = float(1.0 - rng.random()) if rng.random() < 0.7 else None
        min_p = float(rng.random() ** 3) if rng.random() < 0.7 else None
        out.append((float(rng.uniform(0.2, 3.0)), k, top_p, min_p))
    return out


@pytest.mark.parametrize("engine, ref", [("vllm", _ref_vllm), ("sglang", _ref_sglang)])
@pytest.mark.parametrize("ties, masked", [(False, False), (True, False), (True, True)])
def test_engine_rules_match_the_references(engine: str, ref: Any, ties: bool, masked: bool) -> None:
    rng = np.random.default_rng(1 + ties + 2 * masked)
    for T, k, top_p, min_p in SETTINGS + _random_settings(rng, 60):
        z = _logits(rng, 4, 60, ties=ties, masked=masked)
        ours = constraints.probabilities(z, temperature=T, top_k=k, top_p=top_p, min_p=min_p, engine=engine)
        want = np.array([ref(r, T, k, top_p, min_p) for r in z])
        _assert_rows(ours, want, f"{engine} T={T} k={k} top_p={top_p} min_p={min_p}")


# ---- transformers' warpers ---------------------------------------------------------------------


def _hf(z: np.ndarray, T: float, k: int | None, top_p: float | None, min_p: float | None, keep: int = 1) -> np.ndarray:
    torch = pytest.importorskip("torch")
    lp = pytest.importorskip("transformers.generation.logits_process")
    # generate()'s _get_logits_processor, sampling branch: the same conditions, the same order.
    procs: list[Any] = []
    if T != 1.0:
        procs.append(lp.TemperatureLogitsWarper(T))
    if k is not None:
        procs.append(lp.TopKLogitsWarper(top_k=k, min_tokens_to_keep=keep))
    if top_p is not None and top_p < 1.0:
        procs.append(lp.TopPLogitsWarper(top_p=top_p, min_tokens_to_keep=keep))
    if min_p is not None:
        procs.append(lp.MinPLogitsWarper(min_p=min_p, min_tokens_to_keep=keep))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: a thread pool costs ~20 ms a call on a busy machine
    try:
        scores = torch.tensor(z, dtype=torch.float64)
        for proc in procs:
            scores = proc(None, scores)
        out: np.ndarray = torch.softmax(scores, dim=-1).numpy()
    finally:
        torch.set_num_threads(threads)
    return out


def _split_tie(z: np.ndarray, kept: np.ndarray) -> bool:
    """Whether some tied logits are part kept, part dropped (top-p's boundary cut through a tie)."""
    for v in np.unique(z[np.isfinite(z)]):
        at = kept[z == v]
        if at.any() and not at.all():
            return True
    return False


def _assert_like_hf(ours: np.ndarray, hf: np.ndarray, z: np.ndarray, what: str) -> int:
    """Row by row: identical, except that where a tie straddles the boundary torch.sort (not
    stable on long rows) may keep other tied ids: then the same kept values. Returns how many
    rows had such a tie."""
    split = 0
    for r in range(z.shape[0]):
        if _split_tie(z[r], ours[r] > 0):
            split += 1
            np.testing.assert_allclose(np.sort(ours[r]), np.sort(hf[r]), rtol=0, atol=1e-12, err_msg=what)
        else:
            _assert_rows(ours[r], hf[r], f"{what} row {r}")
    return split


@pytest.mark.parametrize("ties, masked", [(False, False), (True, False), (True, True)])
def test_hf_engine_matches_transformers(ties: bool, masked: bool) -> None:
    rng = np.random.default_rng(10 + ties + 2 * masked)
    split = 0
    for T, k, top_p, min_p in SETTINGS + _random_settings(rng, 40):
        z = _logits(rng, 6, 80, ties=ties, masked=masked)
        want = _hf(z, T, k, top_p, min_p)
        what = f"T={T} k={k} top_p={top_p} min_p={min_p}"
        split += _assert_like_hf(
            constraints.probabilities(z, temperature=T, top_k=k, top_p=top_p, min_p=min_p, engine="hf"), want, z, what
        )
        if not (top_p is not None and min_p is not None):  # the one place vLLM's order differs
            vllm = constraints.probabilities(z, temperature=T, top_k=k, top_p=top_p, min_p=min_p, engine="vllm")
            split += _assert_like_hf(vllm, want, z, "vllm " + what)
    if ties:
        assert split > 0, "no row put a tie on top-p's boundary: the tie case was not exercised"


@pytest.mark.parametrize("keep", [2, 5])
def test_hf_min_tokens_to_keep(keep: int) -> None:
    rng = np.random.default_rng(keep)
    for k, top_p, min_p in [(1, None, None), (None, 0.05, None), (None, None, 0.9), (2, 0.1, 0.8)]:
        z = _logits(rng, 6, 50, ties=False, masked=False)
        ours = constraints.probabilities(z, top_k=k, top_p=top_p, min_p=min_p, engine="hf", min_tokens_to_keep=keep)
        _assert_rows(ours, _hf(z, 1.0, k, top_p, min_p, keep), f"keep={keep} k={k} top_p={top_p} min_p={min_p}")
        assert ((ours > 0).sum(axis=1) >= keep).all()


# ---- the documented differences, on rows with a known answer -----------------------------------


def _kept(values: list[float], **settings: Any) -> list[int]:
    return [int(i) for i in np.flatnonzero(constraints.probabilities(np.log(np.array(values)), **settings))]


def test_top_k_ties_kept_by_vllm_and_hf_exactly_k_by_sglang() -> None:
    row = [0.4, 0.2, 0.2, 0.2]
    assert _kept(row, top_k=2, engine="vllm") == [0, 1, 2, 3] == _kept(row, top_k=2, engine="hf")
    assert _kept(row, top_k=2, engine="sglang") == [0, 1]  # ties to the lower id


def test_top_p_after_top_k_renormalises_in_vllm_and_hf_not_in_sglang() -> None:
    row = [0.4, 0.3, 0.2, 0.1]  # after top-2: (4/7, 3/7), so the mass before token 1 is 0.57 > 0.5
    assert _kept(row, top_k=2, top_p=0.5, engine="vllm") == [0] == _kept(row, top_k=2, top_p=0.5, engine="hf")
    assert _kept(row, top_k=2, top_p=0.5, engine="sglang") == [0, 1]  # 0.4 of the full distribution


def test_top_p_ties_at_the_boundary() -> None:
    row = [0.25] * 4  # top_p = 0.6 keeps three of four tied tokens: which three is the tie rule
    assert _kept(row, top_p=0.6, engine="vllm") == [1, 2, 3] == _kept(row, top_p=0.6, engine="hf")
    assert _kept(row, top_p=0.6, engine="sglang") == [0, 1, 2]


def test_min_p_before_top_p_in_vllm_after_it_in_hf() -> None:
    row = [0.5, 0.3, 0.15, 0.05]  # min-p 0.2 drops 0.05; after that the mass before token 2 is 0.84
    settings = dict(top_p=0.82, min_p=0.2)
    assert _kept(row, engine="vllm", **settings) == [0, 1]
    assert _kept(row, engine="hf", **settings) == [0, 1, 2] == _kept(row, engine="sglang", **settings)
    z = np.log(np.array([row]))
    np.testing.assert_allclose(
        constraints.probabilities(z, engine="hf", **settings), _hf(z, 1.0, None, 0.82, 0.2), atol=1e-15
    )


def test_greedy() -> None:
    z = np.array([[0.0, 3.0, 3.0, 1.0], [2.0, -INF, 2.0, 2.0]])
    for engine in constraints.ENGINES:
        np.testing.assert_array_equal(
            constraints.probabilities(z, temperature=0.0, engine=engine), [[0, 1, 0, 0], [1, 0, 0, 0]]
        )
    near = dict(temperature=5e-6, values=np.array([0.0, 1e-5]))
    assert constraints.probabilities(engine="vllm", **near).tolist() == [0.0, 1.0]  # below vLLM's 1e-5
    assert 0 < constraints.probabilities(engine="sglang", **near)[0] < 0.5  # above SGLang's 1e-6
    assert 0 < constraints.probabilities(engine="hf", **near)[0] < 0.5


def test_plain_softmax_float32_batches_and_masks() -> None:
    rng = np.random.default_rng(5)
    z = _logits(rng, 5, 40, ties=False, masked=True)
    p = Logits(z).probabilities()
    e = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-13)
    assert (p[np.isneginf(z)] == 0).all()
    z32 = z.astype(np.float32)
    s = dict(temperature=0.8, top_k=7, top_p=0.9, min_p=0.02)
    np.testing.assert_array_equal(Logits(z32, **s).probabilities(), Logits(z32.astype(np.float64), **s).probabilities())
    for r in range(z.shape[0]):
        np.testing.assert_array_equal(Logits(z[r], **s).probabilities(), Logits(z, **s).probabilities()[r])
    assert Logits(z[0]).shape == (40,) and Logits(z).shape == (5, 40)
    np.testing.assert_array_equal(np.asarray(Logits(z, **s)), Logits(z, **s).probabilities())


# ---- EAGLE-3's draft vocabulary -----------------------------------------------------------------


def _eagle3_d2t(rng: np.random.Generator, V: int, Vd: int) -> tuple[np.ndarray, np.ndarray]:
    """d2t as EAGLE-3's training script builds it: the kept target ids sorted, d2t[i] = id - i."""
    used = np.sort(rng.choice(V, size=Vd, replace=False))
    return used - np.arange(Vd), used


@pytest.mark.parametrize("engine", constraints.ENGINES)
def test_d2t_maps_the_draft_vocabulary(engine: str) -> None:
    rng = np.random.default_rng(7)
    V, Vd = 90, 25
    d2t, used = _eagle3_d2t(rng, V, Vd)
    s = dict(temperature=0.9, top_k=6, top_p=0.8, min_p=0.05, engine=engine)
    for ties in (False, True):
        zd = _logits(rng, 3, Vd, ties=ties, masked=True)
        q = Logits(zd, d2t=d2t, vocab_size=V, **s).probabilities()
        assert q.shape == (3, V)
        assert (np.delete(q, used, axis=1) == 0).all()
        # the EAGLE-3 map is increasing, so the draft-space rules (ties included) carry over
        np.testing.assert_allclose(q[:, used], constraints.probabilities(zd, **s), rtol=0, atol=1e-15)
        np.testing.assert_array_equal(q, Logits(zd, token_map=used, vocab_size=V, **s).probabilities())
    # an absolute map in any order: without ties, the same distribution scattered
    perm = rng.permutation(V)[:Vd]
    zd = _logits(rng, 2, Vd, ties=False, masked=False)
    q = Logits(zd, token_map=perm, vocab_size=V, **s).probabilities()
    np.testing.assert_allclose(q[:, perm], constraints.probabilities(zd, **s), rtol=0, atol=1e-15)


def test_pair_applies_the_same_settings() -> None:
    rng = np.random.default_rng(8)
    V, Vd = 60, 20
    d2t, used = _eagle3_d2t(rng, V, Vd)
    zp = _logits(rng, 2, V, ties=False, masked=False)
    zq = zp[:, used] + 0.3 * rng.normal(size=(2, Vd))  # a draft that roughly agrees with the target
    s = dict(temperature=0.7, top_k=10, top_p=0.95, engine="sglang")
    p, q = constraints.pair(zp, zq, d2t=d2t, **s)
    np.testing.assert_array_equal(p.probabilities(), constraints.probabilities(zp, **s))
    np.testing.assert_array_equal(q.probabilities(), Logits(zq, d2t=d2t, vocab_size=V, **s).probabilities())
    assert p.shape == q.shape == (2, V)
    same = constraints.pair(zp, zp, top_k=3)
    assert same[0].top_k == same[1].top_k == 3 and same[1].d2t is None
    assert 0.0 < mf.optimal_acceptance(p, q, 2, "iid")[0] <= 1.0


# ---- one hook: every public function takes Logits -------------------------------------------


def test_every_public_entry_point_takes_logits() -> None:
    rng = np.random.default_rng(9)
    s = dict(temperature=0.8, top_k=12, top_p=0.95)
    zp, zq = _logits(rng, 3, 30, ties=False, masked=False), _logits(rng, 3, 30, ties=False, masked=False)
    P, Q = Logits(zp, **s), Logits(zq, **s)
    p, q = P.probabilities(), Q.probabilities()
    for scheme in ("iid", "wor", "greedy"):
        assert np.array_equal(mf.optimal_acceptance(P, Q, 2, scheme), mf.optimal_acceptance(p, q, 2, scheme))
    P1, Q1 = Logits(zp[0], **s), Logits(zq[0], **s)
    assert mf.solve_lp(P1, Q1, 2, "wor").alpha == mf.solve_lp(p[0], q[0], 2, "wor").alpha
    indep = Logits(np.stack([zq[0], zp[0]]), **s)  # one drafter per slot: (n, V)
    assert (
        mf.solve_lp(P1, indep, 2, "independent").alpha
        == mf.solve_lp(p[0], np.stack([q[0], p[0]]), 2, "independent").alpha
    )
    assert np.array_equal(mf.acceptance("rrs", P, Q, 3), mf.acceptance("rrs", p, q, 3))
    est = mf.acceptance("kseq", P, Q, 2, exact=False, samples=2000, rng=1)
    assert np.array_equal(est, mf.acceptance("kseq", p, q, 2, exact=False, samples=2000, rng=1))
    a, b = mf.simulate("rrs-wor", P, Q, 2, 500, rng=2), mf.simulate("rrs-wor", p, q, 2, 500, rng=2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    drafts = [int(np.argmax(q[0])), int(np.argsort(q[0])[-2])]
    assert mf.verify("rrs-wor", P1, Q1, drafts, rng=3) == mf.verify("rrs-wor", p[0], q[0], drafts, rng=3)
    assert all(
        np.array_equal(x, y) for x, y in zip(mf.acceptance_bounds(P, Q, 2), mf.acceptance_bounds(p, q, 2), strict=True)
    )
    ra, rb = mf.route_report("sweep", P, Q, 2), mf.route_report("sweep", p, q, 2)
    assert np.array_equal(ra["alpha_plan"], rb["alpha_plan"])
    with pytest.raises(ValueError, match="p: expected shape"):
        mf.solve_lp(P, Q1, 2, "iid")  # the usual shape rules still apply to what Logits stands for


# ---- argument errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(temperature=-0.1), ValueError, "temperature: expected a finite value >= 0"),
        (dict(temperature=INF), ValueError, "temperature"),
        (dict(temperature=float("nan")), ValueError, "temperature: got NaN"),
        (dict(temperature="1"), TypeError, "temperature: expected a real number"),
        (dict(temperature=True), TypeError, "temperature"),
        (dict(top_k=0), ValueError, "top_k: expected an integer >= 1"),
        (dict(top_k=-1), ValueError, "top_k"),
        (dict(top_k=2.0), TypeError, "top_k: expected an integer"),
        (dict(top_p=0.0), ValueError, "top_p: expected 0 < top_p <= 1"),
        (dict(top_p=1.01), ValueError, "top_p"),
        (dict(min_p=-0.01), ValueError, "min_p: expected 0 <= min_p <= 1"),
        (dict(min_p=1.5), ValueError, "min_p"),
        (dict(engine="tgi"), ValueError, "engine: expected one of"),
        (dict(min_tokens_to_keep=0), ValueError, "min_tokens_to_keep: expected an integer >= 1"),
        (dict(min_tokens_to_keep=2), ValueError, "min_tokens_to_keep: only engine 'hf'"),
        (dict(values=np.arange(4)), TypeError, "values: expected float32 or float64 logits"),
        (dict(values=np.zeros((2, 2, 2))), ValueError, "values: expected shape"),
        (dict(values=np.zeros(0)), ValueError, "values: the vocabulary is empty"),
        (dict(values=[[0.0, 1.0], [float("nan"), 0.0]]), ValueError, "values: row 1 contains NaN"),
        (dict(values=[0.0, INF]), ValueError, r"values: row 0 contains \+inf"),
        (dict(values=[[0.0, 1.0], [-INF, -INF]]), ValueError, "values: row 1 has no finite logit"),
        (dict(d2t=[0, 1, 2]), ValueError, "vocab_size: required with d2t"),
        (dict(vocab_size=5), ValueError, "vocab_size: 5 differs from the logits' V = 3"),
        (dict(d2t=[0, 1, 2], token_map=[0, 1, 2], vocab_size=9), ValueError, "d2t, token_map: give one map"),
        (dict(d2t=[0.0, 1.0, 2.0], vocab_size=9), TypeError, "d2t: expected integer token ids"),
        (dict(d2t=[0, 1], vocab_size=9), ValueError, r"d2t: expected shape \(3,\)"),
        (dict(d2t=[0, 1, 7], vocab_size=9), ValueError, "d2t: draft token 2 maps to target id 9, outside"),
        (dict(d2t=[-1, 0, 0], vocab_size=9), ValueError, "d2t: draft token 0 maps to target id -1"),
        (dict(token_map=[4, 2, 4], vocab_size=9), ValueError, "token_map: target id 4 is the image of 2"),
        (dict(token_map=[0, 1, 2], vocab_size=0), ValueError, "vocab_size: expected 1 <= vocab_size"),
    ],
)
def test_errors_name_the_argument(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    kwargs = {"values": [0.0, 1.0, 2.0], **kwargs}
    with pytest.raises(exc, match=match):
        Logits(**kwargs)


def test_the_docs_example_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "inputs.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/guide/inputs.md", "exec"), {})
