"""Held-out LLM-like (p, q) rows: data the full-vocabulary ``wor`` route was never tuned on.

The ``"sweep"`` / ``"optimal"`` (scheme ``"wor"``) route was tuned on the shipped dataset
(``mdsd_fast.load_dataset()``, 537 SmolLM2-135M rows). This module makes synthetic rows of the same
shape (V = 49,152) from a seed, so that its certification rate, gap and time can be measured on
rows it has not seen (bench/verifiers/optimal_wor_route.py, tests/verifiers/test_heldout.py).

    >>> from heldout import heldout_rows, heldout_row
    >>> P, Q, meta = heldout_rows(24, seed=0)     # (24, 49152) float64 each, rows sum to 1
    >>> p, q, m = heldout_row(0, 5)               # row 5 of seed 0 alone (the same values)

Model of one row (all logarithms natural; ``rank`` is a random permutation of 1..V, so the most
probable token has a random id):

    target logit   l_p(i) = -s_p * log(rank_i) + g   * [rank_i == 1] + eps_i
    draft logit    l_q(i) = -s_q * log(rank_i) + g_q * [rank_i == 1] + eps_i + delta_i
    p = softmax(l_p / T),  q = softmax(l_q / T)
    q <- q restricted to its top_k largest entries, renormalised (top_k = 0: q stays full)

with, per row, drawn from the row's own generator:

- ``s_p ~ U(zipf)``: the Zipf exponent of the target (the log-log slope of p against rank at
  T = 1). 1.1-2.0 gives the shipped data's entropy range; s = 1 over 49k tokens is far flatter
  than an LLM (entropy ~7.6 nats at T = 1).
- ``eps_i ~ N(0, sigma^2)``, ``sigma ~ U(noise)``: logit noise shared by p and q, so that p is not
  an exact power law in rank (neighbouring ranks swap, the tail is ragged).
- ``g ~ Exponential(mean=head_gap)``: an extra margin of the top token -- confident positions
  (p_max ~ 1, entropy ~ 0), which the shipped data has many of at T = 0.7.
- draft mismatch, by the row's ``mismatch`` label (see ``MISMATCH``): ``s_q = s_p * (1 + U(-j, j))``
  (a different Zipf exponent), ``g_q = g * (1 + U(-j, j))`` and ``delta_i ~ N(0, sigma_d^2)``
  independent per token (draft-only logit noise). ``"mild"``: sigma_d = 1.0, j = 0.15; ``"strong"``:
  sigma_d = 2.0, j = 0.3.

Measured (``python tests/_support/heldout.py``, 96 rows of seed 0, 5th / 50th / 95th percentiles; shipped
rows in brackets):

- Σmin(p, q), full drafts at T = 1.0: mild 0.64 / 0.70 / 0.77 [skip2 0.36 / 0.59 / 0.91], strong
  0.28 / 0.31 / 0.85 [skip4 0.19 / 0.41 / 0.84]; over all k and T: mild 0.29-0.99, strong 0.09-0.98.
- entropy of p (nats): T = 0.6 0.04-2.5, median 0.5-0.85 [T = 0.7: 0.00 / 1.10 / 3.24]; T = 1.0
  median 2.0-3.8 [0.13 / 3.11 / 5.02]; T = 1.3 median 4.6-6.6 (hotter than anything shipped).
- support of q: full drafts have q > 0 on all 49,152 tokens; the tokens holding 1 - 1e-6 of q
  (what the shipped file stores) number 107-23,652 at T = 0.6 [T = 0.7: 178-24,918] and
  42,000-48,900 at T = 1.0 [27,638-46,434]; top-k drafts have exactly k.

The categorical knobs cycle deterministically with the row index ``i`` so that any 12 consecutive
rows hold every (temperature, top_k) pair once and any 24 every (temperature, top_k, mismatch)
triple once: ``c = i % 24``, ``T = temperatures[c % 3]``, ``top_k = top_ks[c % 4]``,
``mismatch = mismatches[((c % 12) // 6 + c // 12) % len(mismatches)]`` (the balance holds for the
default lengths 3, 4 and 2; other lengths cycle the same way). Row ``i`` of ``seed`` is drawn from
``numpy.random.default_rng([seed, i])`` alone, so it does not depend on the count requested and
``heldout_row(seed, i)`` rebuilds it.

What is different from the shipped data (on purpose: held out): full-support p and full drafts
(every token has p > 0; the shipped file stores only the tokens carrying 1 - 1e-6 of the mass,
unless ``store_tau`` is set), T = 0.6 and 1.3 (shipped: 0.7, 1.0), top-k truncated drafts, and a
power-law-with-noise shape instead of a transformer's logits. ``python tests/_support/heldout.py`` prints
Σmin(p, q), the entropy of p and the support of q of held-out rows beside the shipped rows'.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEFAULT_V", "MISMATCH", "TEMPERATURES", "TOP_KS", "describe", "heldout_row", "heldout_rows"]

DEFAULT_V = 49_152
#: temperatures applied to both p and q (cycled by row index)
TEMPERATURES: tuple[float, ...] = (0.6, 1.0, 1.3)
#: draft truncations: q keeps its top k tokens, renormalised; 0 = the full draft (cycled by index)
TOP_KS: tuple[int, ...] = (0, 20, 100, 1000)
#: draft mismatch presets: per-token draft logit noise sigma_d and relative jitter j of the Zipf
#: exponent and of the top token's margin
MISMATCH: dict[str, dict[str, float]] = {
    "mild": {"sigma_d": 1.0, "jitter": 0.15},
    "strong": {"sigma_d": 2.0, "jitter": 0.3},
}


def _softmax(logits: NDArray[np.float64], T: float) -> NDArray[np.float64]:
    z = logits / T
    z -= z.max()
    e = np.exp(z)
    return e / e.sum()


def _topk(q: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    if k <= 0 or k >= q.size:
        return q
    idx = np.argpartition(-q, k - 1)[:k]
    out = np.zeros_like(q)
    out[idx] = q[idx]
    return out / out.sum()


def _store_cut(d: NDArray[np.float64], tau: float) -> NDArray[np.float64]:
    """Keep the fewest most probable tokens holding >= 1 - tau of d (as the shipped file), renormalise."""
    order = np.argsort(-d, kind="stable")
    cum = np.cumsum(d[order])
    k = min(int(np.searchsorted(cum, 1.0 - tau, side="left")) + 1, d.size)
    out = np.zeros_like(d)
    out[order[:k]] = d[order[:k]]
    return out / out.sum()


def _combo(
    i: int, temperatures: tuple[float, ...], top_ks: tuple[int, ...], mismatches: tuple[str, ...]
) -> tuple[float, int, str]:
    c = i % 24
    T = temperatures[c % len(temperatures)]
    k = top_ks[c % len(top_ks)]
    m = mismatches[((c % 12) // 6 + c // 12) % len(mismatches)]
    return T, k, m


def heldout_row(
    seed: int,
    index: int,
    *,
    V: int = DEFAULT_V,
    temperatures: tuple[float, ...] = TEMPERATURES,
    top_ks: tuple[int, ...] = TOP_KS,
    mismatches: tuple[str, ...] = ("mild", "strong"),
    zipf: tuple[float, float] = (1.1, 2.0),
    noise: tuple[float, float] = (0.5, 2.0),
    head_gap: float = 1.0,
    store_tau: float = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, Any]]:
    """Row ``index`` of ``seed``: ``(p, q, meta)``, p and q float64 of length V summing to 1.

    Knobs (the model is in the module docstring):

    - ``V``: vocabulary size.
    - ``temperatures``, ``top_ks``, ``mismatches``: the values cycled by row index (T divides both
      logits; top_k = 0 keeps the full draft; a mismatch is a key of ``MISMATCH``).
    - ``zipf``: range of the target's Zipf exponent s_p (uniform).
    - ``noise``: range of the shared logit noise's standard deviation sigma (uniform).
    - ``head_gap``: mean of the top token's extra logit margin g (exponential; 0 = none).
    - ``store_tau``: if > 0, cut p and q (after top-k) to their fewest most probable tokens holding
      1 - store_tau of the mass, renormalised, as the shipped file stores rows (1e-6 there).

    ``meta`` records everything needed to describe the row: seed, index, temperature, top_k,
    mismatch, s_p, s_q, sigma, sigma_d, g, g_q, and ``draft`` (e.g. ``"mild-top100"``) for
    ``mdsd_fast.from_arrays``.
    """
    T, k, mm = _combo(index, temperatures, top_ks, mismatches)
    if mm not in MISMATCH:
        raise ValueError(f"unknown mismatch {mm!r}; expected one of {sorted(MISMATCH)}")
    sigma_d, jit = MISMATCH[mm]["sigma_d"], MISMATCH[mm]["jitter"]
    rng = np.random.default_rng([seed, index])
    rank = rng.permutation(V) + 1
    logr = np.log(rank.astype(np.float64))
    s_p = float(rng.uniform(*zipf))
    sigma = float(rng.uniform(*noise))
    g = float(rng.exponential(head_gap)) if head_gap > 0 else 0.0
    s_q = s_p * (1.0 + float(rng.uniform(-jit, jit)))
    g_q = g * (1.0 + float(rng.uniform(-jit, jit)))
    eps = rng.normal(0.0, sigma, V)
    delta = rng.normal(0.0, sigma_d, V)
    top = rank == 1
    lp = -s_p * logr + eps + g * top
    lq = -s_q * logr + eps + g_q * top + delta
    p = _softmax(lp, T)
    q = _topk(_softmax(lq, T), k)
    if store_tau > 0:
        p, q = _store_cut(p, store_tau), _store_cut(q, store_tau)
    meta = {
        "seed": int(seed),
        "index": int(index),
        "temperature": float(T),
        "top_k": int(k),
        "mismatch": mm,
        "draft": f"{mm}-{'full' if k == 0 else f'top{k}'}",
        "s_p": s_p,
        "s_q": s_q,
        "sigma": sigma,
        "sigma_d": sigma_d,
        "g": g,
        "g_q": g_q,
    }
    return p, q, meta


def heldout_rows(
    count: int, seed: int = 0, *, start: int = 0, **knobs: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[dict[str, Any]]]:
    """Rows ``start .. start + count - 1`` of ``seed``: ``(P, Q, meta)``.

    ``P`` and ``Q`` are C-contiguous float64 arrays of shape ``(count, V)``, each row summing to 1;
    ``meta`` is a list of ``count`` dicts (see :func:`heldout_row`, which also documents the
    ``knobs``: V, temperatures, top_ks, mismatches, zipf, noise, head_gap, store_tau). Deterministic:
    the same arguments give the same arrays, and row i equals ``heldout_row(seed, i, **knobs)``.
    """
    V = int(knobs.get("V", DEFAULT_V))
    P = np.empty((count, V), dtype=np.float64)
    Q = np.empty((count, V), dtype=np.float64)
    meta = []
    for r in range(count):
        p, q, m = heldout_row(seed, start + r, **knobs)
        P[r], Q[r] = p, q
        meta.append(m)
    return P, Q, meta


def describe(P: NDArray[np.floating[Any]], Q: NDArray[np.floating[Any]]) -> dict[str, NDArray[np.float64]]:
    """Per row: ``overlap`` Σmin(p, q), ``entropy_p`` (nats), ``support_q`` (#q > 0),
    ``support_q_1e6`` (fewest tokens holding 1 - 1e-6 of q: comparable to the shipped file's stored
    support) and ``p_max``."""
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    P = P / P.sum(axis=1, keepdims=True)
    Q = Q / Q.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(P > 0, P * np.log(P), 0.0).sum(axis=1)
    sq = np.sort(Q, axis=1)[:, ::-1]
    cum = np.cumsum(sq, axis=1)
    s6 = np.array([min(int(np.searchsorted(c, 1.0 - 1e-6, side="left")) + 1, Q.shape[1]) for c in cum])
    return {
        "overlap": np.minimum(P, Q).sum(axis=1),
        "entropy_p": ent,
        "support_q": (Q > 0).sum(axis=1).astype(np.float64),
        "support_q_1e6": s6.astype(np.float64),
        "p_max": P.max(axis=1),
    }


def _quantiles(x: NDArray[np.float64]) -> str:
    qs = np.percentile(x, [5, 50, 95])
    fmt = (lambda v: f"{v:,.0f}") if np.max(np.abs(qs)) >= 100 else (lambda v: f"{v:.2f}")
    return " / ".join(fmt(v) for v in qs)


def _main() -> int:
    ap = argparse.ArgumentParser(description="Held-out rows beside the shipped data: 5th / 50th / 95th percentiles.")
    ap.add_argument("--count", type=int, default=96)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-shipped", action="store_true", help="skip the shipped dataset (saves ~5 s)")
    args = ap.parse_args()
    groups: list[tuple[str, dict[str, NDArray[np.float64]]]] = []
    P, Q, meta = heldout_rows(args.count, args.seed)
    d = describe(P, Q)
    keys = [(m["mismatch"], m["temperature"], m["top_k"]) for m in meta]
    for mm in ("mild", "strong"):
        for T in TEMPERATURES:
            sel = [i for i, (a, b, _) in enumerate(keys) if a == mm and b == T]
            full = [i for i in sel if keys[i][2] == 0]
            if sel:
                groups.append((f"held-out {mm} T={T} (all k)", {k: v[sel] for k, v in d.items()}))
            if full:
                groups.append((f"held-out {mm} T={T} full q", {k: v[full] for k, v in d.items()}))
    if not args.no_shipped:
        import mdsd_fast as mf

        ds = mf.load_dataset()
        for draft in ("skip2", "skip4", "ngram2"):
            for T in (0.7, 1.0):
                sp, sq = ds.select(draft=draft, temperature=T).dense(np.float64)
                groups.append((f"shipped {draft} T={T}", describe(sp, sq)))
    print("| rows | n | Σmin(p,q) | H(p) nats | p_max | #q>0 | #q for 1-1e-6 |")
    print("|---|---|---|---|---|---|---|")
    for name, g in groups:
        print(
            f"| {name} | {g['overlap'].size} | {_quantiles(g['overlap'])} | {_quantiles(g['entropy_p'])} | "
            f"{_quantiles(g['p_max'])} | {_quantiles(g['support_q'])} | {_quantiles(g['support_q_1e6'])} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
