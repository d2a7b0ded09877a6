"""Block verification of one draft chain (Sun et al., arXiv:2403.10444, ICLR 2025).

A chain x_1..x_gamma is drafted from q_0..q_{gamma-1} (row i = the draft's next-token law after
x_1..x_i); the target gives p_0..p_gamma. Token-level verification accepts x_i with probability
min(1, p_{i-1}(x_i) / q_{i-1}(x_i)) and stops at the first rejection. Block verification carries a
weight w_i = min(1, w_{i-1} p_{i-1}(x_i) / q_{i-1}(x_i)) (w_0 = 1) and accepts the longest prefix
whose independent test passes: tau = max{i : eta_i <= h_i}, h_gamma = w_gamma,
h_i = r_i / s_i with r_i = sum_x (w_i p_i(x) - q_i(x))^+ and s_i = sum_x (q_i(x) - w_i p_i(x))^+.
The final token is drawn from p_gamma if tau = gamma, else from the residual (w_tau p_tau - q_tau)^+.
Invariant (docs/guide/trees_verification.md §2): Pr(tau >= i | x_1..x_i) = w_i, so the expected accepted
length over drafting is sum_i E[w_i], never below token level's sum_i E[prod_j min(1, p/q)].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..inputs.args import int_array
from ..inputs.pairs import as_distribution
from ..inputs.rules import as_array

__all__ = [
    "Oracle",
    "residual",
    "block_weights",
    "block_acceptance_law",
    "block_expected_accepted",
    "block_output_law",
    "block_verify",
    "ChainValues",
    "chain_values",
    "MAX_PREFIXES",
]

#: A model oracle: prefix (relative to the root) -> (p, q), the target's and the draft's next-token laws.
Oracle = Callable[[tuple[int, ...]], tuple[ArrayLike, ArrayLike]]

#: ``chain_values`` enumerates every prefix; it refuses more than this many oracle calls.
MAX_PREFIXES = 1_000_000


def residual(w: float, mb: NDArray[np.float64], ms: NDArray[np.float64]) -> tuple[NDArray[np.float64], float, float]:
    """(R, r, s): R = (w mb - ms)^+, r = sum R, s = sum (ms - w mb)^+ = 1 - w + r.

    After a draft from ``ms`` is tried with weight min(1, w mb / ms) and fails, which happens with
    probability s, the node must still be accepted with probability r / s and emit R / r; this is
    the one step that block and traversal verification repeat.
    """
    diff = w * mb - ms
    big = np.maximum(diff, 0.0)
    return big, float(big.sum()), float(np.maximum(-diff, 0.0).sum())


def _chain(draft: Any, p: Any, q: Any) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    x = as_array("draft", draft)
    if x.ndim != 1 or (x.size and (x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.integer))):
        raise ValueError(f"draft must be a 1-D integer array of tokens, got shape {x.shape} dtype {x.dtype}")
    g = x.size
    pp = as_distribution("p", p, ndim=(2,))
    qq = as_distribution("q", q, ndim=(2,))
    if pp.shape[0] != g + 1:
        raise ValueError(f"p must have gamma + 1 = {g + 1} rows (p_0..p_gamma), got {pp.shape[0]}")
    if qq.shape[0] not in (g, g + 1) or qq.shape[1] != pp.shape[1]:
        raise ValueError(f"q must have gamma = {g} (or gamma + 1) rows of V = {pp.shape[1]}, got {qq.shape}")
    xs = int_array("draft", x)  # checked in its own dtype, then copied
    if g and not bool(np.all((xs >= 0) & (xs < pp.shape[1]))):
        raise ValueError(f"draft tokens must lie in [0, {pp.shape[1]})")
    if g and not bool(np.all(qq[np.arange(g), xs] > 0.0)):
        raise ValueError("draft holds a token its draft row gives probability 0 (it cannot have been drafted)")
    return xs, pp, qq


def _weights_and_tests(
    x: NDArray[np.int64], p: NDArray[np.float64], q: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    g = x.size
    w = np.ones(g + 1)
    for i in range(1, g + 1):
        w[i] = min(1.0, w[i - 1] * p[i - 1, x[i - 1]] / q[i - 1, x[i - 1]])
    h = np.zeros(g + 1)  # h[0] unused: tau = 0 when no test passes
    if g:
        h[g] = w[g]
    for i in range(1, g):
        _, r, s = residual(w[i], p[i], q[i])
        h[i] = min(1.0, r / s) if s > 0.0 else 1.0  # r <= s exactly; the clamp guards rounding
    return w, h


def block_weights(draft: ArrayLike, p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """w_0..w_gamma: w_i = Pr(tau >= i | x_1..x_i) in expectation over the rest of the chain."""
    x, pp, qq = _chain(draft, p, q)
    return _weights_and_tests(x, pp, qq)[0]


def block_acceptance_law(draft: ArrayLike, p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Pr(tau = i), i = 0..gamma, for the drafted chain (exact: the tests are independent)."""
    x, pp, qq = _chain(draft, p, q)
    _, h = _weights_and_tests(x, pp, qq)
    g = x.size
    law = np.zeros(g + 1)
    none_above = 1.0  # Pr(every test above i fails)
    for i in range(g, 0, -1):
        law[i] = h[i] * none_above
        none_above *= 1.0 - h[i]
    law[0] = none_above
    return law


def block_expected_accepted(draft: ArrayLike, p: ArrayLike, q: ArrayLike) -> float:
    """E[tau | drafted chain]: the exact expected number of accepted draft tokens."""
    law = block_acceptance_law(draft, p, q)
    return float(np.arange(law.size) @ law)


def _final_law(
    tau: int, x: NDArray[np.int64], p: NDArray[np.float64], q: NDArray[np.float64], w: float
) -> NDArray[np.float64]:
    target: NDArray[np.float64] = p[tau]
    if tau == x.size:
        return target
    big, r, _ = residual(w, target, q[tau])
    # r = 0 only where Pr(tau) = 0 up to rounding; p keeps the output a distribution there.
    return big / r if r > 0.0 else target


def block_output_law(draft: ArrayLike, p: ArrayLike, q: ArrayLike) -> dict[tuple[int, ...], float]:
    """Exact law of the emitted tokens (accepted prefix + final token) given the drafted chain."""
    x, pp, qq = _chain(draft, p, q)
    w, _ = _weights_and_tests(x, pp, qq)
    law = block_acceptance_law(x, pp, qq)
    out: dict[tuple[int, ...], float] = {}
    for tau in range(x.size + 1):
        if law[tau] == 0.0:
            continue
        final = _final_law(tau, x, pp, qq, float(w[tau]))
        prefix = tuple(int(t) for t in x[:tau])
        for y in np.flatnonzero(final):
            out[prefix + (int(y),)] = out.get(prefix + (int(y),), 0.0) + float(law[tau] * final[y])
    return out


def block_verify(
    draft: ArrayLike,
    p: ArrayLike,
    q: ArrayLike,
    *,
    uniforms: ArrayLike | None = None,
    samples: int = 1,
    rng: Any = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Verify one drafted chain S times: (tau, final token), each of shape (S,).

    Row k of ``uniforms`` (shape (S, gamma + 1), values in [0, 1)) holds eta_1..eta_gamma and the
    final token's inverse-CDF uniform; without it, ``samples`` rows come from
    ``numpy.random.default_rng(rng)``."""
    x, pp, qq = _chain(draft, p, q)
    g = x.size
    if uniforms is None:
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
            raise ValueError(f"samples must be a non-negative integer, got {samples!r}")
        u = np.random.default_rng(rng).random((int(samples), g + 1))
    else:
        u = np.atleast_2d(np.asarray(uniforms, dtype=np.float64))
        if u.ndim != 2 or u.shape[1] != g + 1 or not bool(np.all((u >= 0.0) & (u < 1.0))):
            raise ValueError(f"uniforms must have shape (S, gamma + 1 = {g + 1}) with values in [0, 1), got {u.shape}")
    w, h = _weights_and_tests(x, pp, qq)
    passed = u[:, :g] <= h[1:]
    # tau = the last passed test (0 if none): argmax over the reversed columns finds it.
    tau = np.where(passed.any(axis=1), g - np.argmax(passed[:, ::-1], axis=1), 0).astype(np.int64)
    final = np.empty(tau.size, dtype=np.int64)
    for t in np.unique(tau):
        rows = tau == t
        cdf = np.cumsum(_final_law(int(t), x, pp, qq, float(w[t])))
        final[rows] = np.minimum(np.searchsorted(cdf, u[rows, g] * cdf[-1], side="right"), cdf.size - 1)
    return tau, final


@dataclass(frozen=True)
class ChainValues:
    """Exact expected accepted lengths over chain drafting (gamma steps from the oracle).

    block: block verification, sum_i E[w_i]. sd: token-level, sum_k E[prod_{j<=k} min(1, p/q)].
    coupling_bound: sum_l sum_{x^l} min(P(x^l), Q(x^l)), the most any lossless verifier of the
    chain can reach at each length l (accepting x^l needs both laws to put mass there).
    """

    block: float
    sd: float
    coupling_bound: float


def chain_values(oracle: Oracle, gamma: int) -> ChainValues:
    """Block, token-level and the coupling bound by enumerating every drafted prefix (V^gamma calls)."""
    if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or gamma < 0:
        raise ValueError(f"gamma must be a non-negative integer, got {gamma!r}")
    totals = np.zeros(3)
    calls = [0]

    def visit(prefix: tuple[int, ...], qprob: float, pprob: float, w: float, a: float) -> None:
        calls[0] += 1
        if calls[0] > MAX_PREFIXES:
            raise ValueError(f"chain_values: more than MAX_PREFIXES = {MAX_PREFIXES} prefixes; lower gamma")
        pr, qr = oracle(prefix)
        prow = as_distribution("oracle p", pr, ndim=(1,))
        qrow = as_distribution("oracle q", qr, ndim=(1,))
        for t in np.flatnonzero(qrow):
            qn, pn = qprob * qrow[t], pprob * prow[t]
            ratio = prow[t] / qrow[t]
            wn, an = min(1.0, w * ratio), a * min(1.0, ratio)
            totals[:] += (qn * wn, qn * an, min(qn, pn))
            if len(prefix) + 1 < gamma:
                visit(prefix + (int(t),), qn, pn, wn, an)

    if gamma:
        visit((), 1.0, 1.0, 1.0, 1.0)
    return ChainValues(float(totals[0]), float(totals[1]), float(totals[2]))
