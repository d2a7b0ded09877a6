"""The generator's engines emit what their sources say: each reproduced bug's first-position law
equals its closed form, the kernels' engines emit p, and the log records the served distribution."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from served_rows import synthetic_rows

from mdsd_fast.served import ENGINES, generate_served
from mdsd_fast.served.generate import _step, _top_p_rows

ROWS = synthetic_rows(R=4, K=6, seed=2)
DRAWS = 40_000


def _first_law(engine: str, row: int = 1) -> np.ndarray:
    """Empirical law of the first emitted token of a step at ``row`` (local ids)."""
    rng = np.random.default_rng(11)
    rows = np.full((DRAWS, 4), row)
    target = _top_p_rows(ROWS.p, canonical=False) if engine == "top-p" else ROWS.p
    res = _step(engine, rows, ROWS, target[rows], rng)
    first = (res[0] if isinstance(res, tuple) else res)[:, 0]
    return np.bincount(first, minlength=ROWS.p.shape[1]) / DRAWS


def _expected(engine: str, row: int = 1) -> np.ndarray:
    p, q = ROWS.p[row], ROWS.q[row]
    if engine == "union":  # accept d with 1 - (1 - p(d))^2, else p without d
        d = int(np.argmax(q))
        out = (1 - p[d]) * p
        out[d] = 1 - (1 - p[d]) ** 2
        return out
    if engine == "argmax":
        return np.eye(p.size)[int(np.argmax(p))]
    if engine == "onehot-q":  # q's top token a: emitted q(a) p(a); the rest in proportion to p
        a = int(np.argmax(q))
        out = (1 - q[a] * p[a]) * p / (1 - p[a])
        out[a] = q[a] * p[a]
        return out
    if engine == "top-p":
        return _top_p_rows(ROWS.p, canonical=False)[row]
    return p  # vllm, sglang, and tree-as-chain's first position: lossless


@pytest.mark.parametrize("engine", ENGINES)
def test_first_position_law_matches_the_closed_form(engine):
    got, want = _first_law(engine), _expected(engine)
    se = np.sqrt(np.maximum(want * (1 - want), 1e-12) / DRAWS)
    assert np.all(np.abs(got - want) <= 5 * se + 1e-12), (engine, got, want)
    tv = 0.5 * np.abs(want - ROWS.p[1]).sum()
    assert (tv > 0.02) == (engine in ("union", "argmax", "onehot-q", "top-p")), tv  # the bugs are bugs


def test_canonical_and_off_by_one_top_p():
    p = np.array([[0.5, 0.3, 0.15, 0.05, 0.0], [0.95, 0.05, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(_top_p_rows(p, True)[0], [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0, 0])
    np.testing.assert_allclose(_top_p_rows(p, False)[0], [0.5 / 0.8, 0.3 / 0.8, 0, 0, 0])
    np.testing.assert_allclose(_top_p_rows(p, False)[1], [1, 0, 0, 0, 0])  # at least one token


def test_the_log_records_the_served_distribution(tmp_path):
    path = generate_served(tmp_path / "v.jsonl", "vllm", responses=3, length=7, rows=ROWS, top_logprobs=4)
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        rec = json.loads(line)
        content = rec["choices"][0]["logprobs"]["content"]
        assert len(content) == 7 and rec["temperature"] in (0.7, 1.0)
        for pos in content:
            tops = pos["top_logprobs"]
            assert len(tops) <= 4 and [t["logprob"] for t in tops] == sorted((t["logprob"] for t in tops), reverse=True)
            assert sum(math.exp(t["logprob"]) for t in tops) <= 1 + 1e-12
            mine = [t for t in tops if t["token"] == pos["token"]]
            assert not mine or mine[0]["logprob"] == pos["logprob"]
    for kw in (dict(engine="nope"), dict(responses=0), dict(top_logprobs=99), dict(gamma=0)):
        with pytest.raises(ValueError):
            generate_served(tmp_path / "x.jsonl", **{"engine": "vllm", "rows": ROWS, **kw})
    assert not (tmp_path / "x.jsonl").exists()
