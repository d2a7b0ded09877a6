"""The bracket of the largest alpha*_iid over completions (python/mdsd_fast/intervals/iid_max.py,
docs/design/intervals.md §3.3): a witness completion below it, a certified bound above it.

* The tangent bound alone (no other high given) is never below alpha* of any completion of a fine
  grid (V = 6, every split of each side's unseen mass in steps of u/10), and the witness is never
  below the grid's best: the bracket holds the grid's maximum, and it closes (width <= 1e-9).
* The witness is a real completion: logged values kept, caps and sums respected, and its
  alpha*_iid, recomputed on the full vocabulary with the lump spread over the unlogged tokens,
  is the witness.
* The symmetry lemma: spreading the unlogged-in-both mass evenly never lowers alpha*_iid, and
  the lump row's alpha* is the evenly spread row's.
* ``fill_max`` equals the maximum over the capped simplex's vertices.
* Negative control: a tangent without its q part (not above the cut) gives a "bound" that the grid
  beats on some row: the grid check can tell a wrong bound.

Rows are generated here (Dirichlet rows cut to their top 2 per side), not taken from the shipped data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mdsd_fast as mf
from mdsd_fast.intervals import bounds as iv
from mdsd_fast.intervals import ends
from mdsd_fast.intervals import iid_max as tight

V, K, G = 6, 2, 10


def rows(seed: int, count: int, v: int = V, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    """Top-k logs of random rows over v tokens (zeros off the log); each side's unseen mass fits its caps."""
    rng = np.random.default_rng(seed)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    while len(out) < count:
        pair = []
        for _ in range(2):
            full = rng.dirichlet(np.full(v, rng.choice([0.3, 1.0, 3.0])))
            cut = np.zeros(v)
            top = np.argsort(-full, kind="stable")[:k]
            cut[top] = full[top]
            pair.append(cut)
        p, q = pair
        if all(1 - x.sum() <= x[x > 0].min() * (v - k) * (1 - 1e-9) for x in (p, q)):
            out.append((p, q))
    return np.array([p for p, _ in out]), np.array([q for _, q in out])


def splits(x: np.ndarray) -> np.ndarray:
    """Every completion of one logged row whose unseen tokens take multiples of u/G (within caps)."""
    free = np.flatnonzero(x == 0)
    u, t = 1 - x.sum(), x[x > 0].min()
    out = []
    for parts in itertools.product(range(G + 1), repeat=free.size):
        if sum(parts) == G and max(parts) * u / G <= t * (1 + 1e-12):
            c = x.copy()
            c[free] = np.asarray(parts) * u / G
            out.append(c)
    return np.array(out)


def grid_max(p: np.ndarray, q: np.ndarray, n: int, scheme: str = "iid") -> float:
    P, Q = splits(p), splits(q)
    pp = np.repeat(P, Q.shape[0], axis=0)
    qq = np.tile(Q, (P.shape[0], 1))
    return float(np.max(mf.optimal_acceptance(pp, qq, n, scheme)))


def lump_layout(p: np.ndarray, q: np.ndarray) -> tuple[object, object]:
    P, Q, Vv, _ = iv._parts(p, q)
    return iv.union(P, Q, Vv, ends._Log)


@pytest.mark.parametrize("n", [2, 3])
def test_bracket_holds_the_grid_maximum_and_closes(n: int) -> None:
    p, q = rows(11 + n, 8)
    pl, ql = lump_layout(p, q)
    br = tight.iid_max(pl, ql, n, np.full(p.shape[0], np.inf))  # the tangents' bound alone
    for r in range(p.shape[0]):
        g = grid_max(p[r], q[r], n)
        assert g <= br.high[r] + 1e-12, (r, g, br.high[r])
        assert br.witness[r] >= g - 1e-12, (r, g, br.witness[r])
    assert np.all(br.high - br.witness <= 1e-9)
    # and the function's own high (the minimum over every H, §3.1) is the same maximum here
    hi = iv._bounds(p, q, n, "iid", 0)[1] - iv.BOUND_SLACK
    assert np.all(np.abs(hi - br.witness) <= 1e-9)


@pytest.mark.parametrize(("scheme", "n"), [("greedy", 2), ("top1+iid", 3)])
def test_bracket_of_the_mixed_schemes(scheme: str, n: int) -> None:
    """The top token of q drafted, the rest i.i.d. off it (docs/theory/greedy.md §5.2): the same bracket."""
    p, q = rows(31 + n, 8)
    witness, high = iv._bounds(p, q, n, scheme, 0, witnesses=True)[3], iv._bounds(p, q, n, scheme, 0)[1]
    for r in range(p.shape[0]):
        g = grid_max(p[r], q[r], n, scheme)
        assert g <= high[r] + 1e-12, (r, g, high[r])  # high: BOUND_SLACK included, clipped to 1
        assert witness[r] >= g - 1e-12, (r, g, witness[r])
    assert np.all(high - witness <= 1e-9 + iv.BOUND_SLACK)


@pytest.mark.parametrize(("scheme", "n", "m", "v"), [("iid", 2, 0, V), ("greedy", 2, 1, 400), ("top1+iid", 3, 1, 400)])
def test_witness_is_a_real_completion(scheme: str, n: int, m: int, v: int) -> None:
    """At v = 400 the unlogged-in-both mass outweighs every logged token of q: the lump row's own
    top token would be the lump, which no real completion has (hence the split pair in _alpha)."""
    p, q = rows(5, 12, v, 3 if m else K)
    pl, ql = lump_layout(p, q)
    T = ends._top(ql, m) if m else None
    br = tight.iid_max(pl, ql, n, np.full(p.shape[0], np.inf), T=T, m=m)
    for r in range(p.shape[0]):
        ids = np.flatnonzero((p[r] > 0) | (q[r] > 0))  # the union support, ascending: its columns
        hidden = np.setdiff1d(np.arange(v), ids)
        full = []
        for x, comp in ((p[r], br.p[r]), (q[r], br.q[r])):
            y = np.zeros(v)
            y[ids] = comp[: ids.size]
            y[hidden] = comp[-1] / max(hidden.size, 1)
            logged = x > 0
            assert np.array_equal(y[logged], x[logged])  # logged values kept
            assert np.all(y[~logged] <= x[logged].min() * (1 + 1e-12))  # caps
            assert abs(y.sum() - 1) <= 1e-12
            full.append(y)
        assert abs(mf.optimal_acceptance(full[0], full[1], n, scheme) - br.witness[r]) <= 1e-12


def test_even_spread_of_the_unlogged_in_both_mass_is_best() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 5))
        a = rng.dirichlet(np.ones(4))  # the logged-in-both part, then 5 tokens of D
        mp, mq = rng.uniform(0.05, 0.5, size=2)
        p = np.concatenate([a * (1 - mp), np.zeros(5)])
        q = np.concatenate([rng.dirichlet(np.ones(4)) * (1 - mq), np.zeros(5)])
        pe, qe = p.copy(), q.copy()
        pe[4:], qe[4:] = mp / 5, mq / 5
        pu, qu = p.copy(), q.copy()
        pu[4:], qu[4:] = rng.dirichlet(np.ones(5)) * mp, rng.dirichlet(np.ones(5)) * mq
        even = mf.optimal_acceptance(pe, qe, n, "iid")
        assert mf.optimal_acceptance(pu, qu, n, "iid") <= even + 1e-12
        lump = mf.optimal_acceptance(np.append(pe[:4], mp), np.append(qe[:4], mq), n, "iid")
        assert abs(lump - even) <= 1e-12


def test_fill_max_is_the_best_vertex() -> None:
    rng = np.random.default_rng(4)
    for _ in range(300):
        d = int(rng.integers(1, 6))
        c, caps = rng.normal(size=d), rng.uniform(0.0, 1.0, size=d)
        total = rng.uniform(0, caps.sum())
        best = -np.inf
        for at_cap in itertools.product([0, 1], repeat=d):  # one coordinate free, the rest at a bound
            for j in range(d):
                x = np.where(np.asarray(at_cap) == 1, caps, 0.0)
                x[j] = 0.0
                x[j] = total - x.sum()
                if -1e-12 <= x[j] <= caps[j] + 1e-12:
                    best = max(best, float(c @ x))
        assert abs(tight.fill_max(c, caps, total) - best) <= 1e-12


def test_negative_control_a_tangent_without_its_q_part_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    right = tight._tangent

    def flat_in_q(*args: object) -> tuple[float, np.ndarray, np.ndarray]:
        c, gp, gq = right(*args)  # type: ignore[arg-type]
        xq = args[6]
        return c + float(gq @ xq), gp, np.zeros_like(gq)  # the same value at x, no q slope

    monkeypatch.setattr(tight, "_tangent", flat_in_q)
    p, q = rows(21, 8)
    n = 3
    pl, ql = lump_layout(p, q)
    br = tight.iid_max(pl, ql, n, np.full(p.shape[0], np.inf), steps=3)
    beaten = [grid_max(p[r], q[r], n) > br.high[r] + 1e-6 for r in range(p.shape[0])]
    assert any(beaten)
