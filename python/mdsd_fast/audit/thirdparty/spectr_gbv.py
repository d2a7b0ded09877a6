"""SpecTr-GBV's block verification (junemily/SpecTr-GBV) ported under the audit contract.

What is ported (``src/engine.py``, ``Decoding.speculative_decoding``, commit e399f446): one
iteration of the verification loop. K candidate sequences of ``gamma`` tokens are drawn i.i.d. from
the draft model. Candidate j is walked position by position; after its i-th token (i < gamma - 1)
the accumulated products m_s, m_b of draft and target probabilities along it give

    acceptance = [sum_y m_b p'(y) (1 - min(1, m_s q'(y) / (m_b p'(y))))^K - m_b (1 - min(1, m_s / m_b))^K]
                 / [1 - (1 - m_s)^K - sum_y m_b p'(y) (1 - (1 - min(1, m_s q'(y) / (m_b p'(y))))^K)]

(p', q' the next position's laws), and its last token is accepted with probability
m_b (1 - (1 - min(1, m_s / m_b))^K) / (1 - (1 - m_s)^K). The first candidate whose whole block is
accepted ends the walk; otherwise the longest accepted prefix stands and the next token is drawn
from the residual m_b p(y) (1 - min(1, m_s q(y) / (m_b p(y)))^K), normalised. The acceptance
steps raise (1 - ratio) to the K-th power, the residual raises ratio itself: with K = 1 both are
the standard rule, with K >= 2 they do not match. Every eps (1e-20), clamp, the order of the
random draws and the skip of prefixes already rejected are kept; float64 instead of the model's
dtype.

The audit sees one position: :class:`SpecTrGBV` returns the first token the block emits. The
positions after the first have the same laws p and q whatever came before (a memoryless target
and draft, a valid language model for which any lossless block verifier must emit p at the first
position); the drafts the audit passes are the K first tokens, drawn i.i.d. from q (scheme
"iid", n = K), and their continuations are drawn i.i.d. from q with the caller's ``rng``.
:func:`first_token_law` is the exact law of that first token, by enumeration of the candidates'
continuations and of every accept / reject path. ``gamma`` defaults to 2, the smallest the
repository's command line accepts (``--gamma`` must be at least 2); gamma = 1 is the final step
alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...inputs.pairs import as_distribution

__all__ = ["EPS", "SpecTrGBV", "first_token_law", "verify", "verify_gamma1"]

#: The engine's ``eps`` (a float tensor of 1e-20 added to every denominator).
EPS = 1e-20
_MAX_PATHS = 1 << 20  # enumeration guard of first_token_law


class _Branch(Exception):
    """Raised by the enumerating decider when a decision has not been fixed yet."""


class _Replay:
    """A decider that replays fixed decisions, weighting the path, and branches after them."""

    def __init__(self, forced: tuple[bool, ...], weight: float) -> None:
        self.forced, self.weight, self.calls = forced, weight, 0
        self.branches: list[tuple[bool, ...]] = []

    def __call__(self, a: float) -> bool:
        a = min(max(a, 0.0), 1.0)  # torch.rand in [0, 1): P(u < a)
        i, self.calls = self.calls, self.calls + 1
        if i < len(self.forced):
            self.weight *= a if self.forced[i] else 1.0 - a
            return self.forced[i]
        f = self.forced
        self.branches = [f + (a == 1.0,)] if a in (0.0, 1.0) else [f + (True,), f + (False,)]
        raise _Branch


def _block(
    p: NDArray[np.float64], q: NDArray[np.float64], x: NDArray[np.int64], decide: Callable[[float], bool]
) -> int | NDArray[np.float64]:
    """One verification iteration on candidates x (K, gamma); the first emitted token, or the
    residual law (V,) when the first token comes from the residual. ``decide(a)`` is one
    ``torch.rand(1) < a``."""
    K, gamma = x.shape
    n = -1  # engine's n - prefix_len: index of the last accepted position
    accepted: tuple[int, ...] = ()
    ms_final = mb_final = 1.0
    seen: set[tuple[int, ...]] = set()

    def e(t: Any) -> Any:  # exp_term
        return (1.0 - t) ** K

    for j in range(K):
        m_s = m_b = 1.0
        for k in range(n + 1):  # the accepted prefix, read along this candidate's own tokens
            m_s *= float(q[x[j, k]])
            m_b *= float(p[x[j, k]])
        for i in range(n + 1, gamma - 1):
            t = int(x[j, i])
            m_s *= float(q[t])
            m_b *= float(p[t])
            min_ratio = np.minimum((m_s * q) / (m_b * p + EPS), 1.0)
            raw_ratio = min(m_s / (m_b + EPS), 1.0)
            num = float(np.sum(m_b * p * e(min_ratio))) - m_b * e(raw_ratio)
            den = 1.0 - e(m_s) - float(np.sum(m_b * p * (1.0 - e(min_ratio))))
            key = tuple(int(v) for v in x[j, : i + 1])
            if key in seen:  # the engine draws its uniform first, then skips
                continue
            if decide(num / (den + EPS)):
                accepted, n, ms_final, mb_final = key, i, m_s, m_b
            else:
                seen.add(key)
        t = int(x[j, gamma - 1])
        m_s *= float(q[t])
        m_b *= float(p[t])
        ratio = min(m_s / (m_b + EPS), 1.0)
        if decide((m_b * (1.0 - e(ratio))) / (1.0 - e(m_s) + EPS)):
            return int(x[j, 0])
    if accepted:
        return accepted[0]
    res = mb_final * p * (1.0 - np.minimum(ms_final * q / (mb_final * p + EPS), 1.0) ** K)
    s = float(res.sum())
    if not s > 0.0:
        raise ValueError("the residual is all zero: the engine's torch.multinomial fails on it")
    out: NDArray[np.float64] = res / max(s, EPS)
    return out


class SpecTrGBV:
    """``verify(p, q, drafts, rng) -> token``: the first token one SpecTr-GBV verification
    iteration emits, K = len(drafts) candidates of ``gamma`` tokens (see the module docstring)."""

    def __init__(self, gamma: int = 2) -> None:
        if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= 16:
            raise ValueError(f"gamma: expected an integer in [1, 16], got {gamma!r}")
        self.gamma = gamma

    def __call__(
        self, p: NDArray[np.float64], q: NDArray[np.float64], drafts: NDArray[np.int64], rng: np.random.Generator
    ) -> int:
        d = np.asarray(drafts)
        if d.ndim != 1 or d.size < 1 or d.dtype.kind not in "iu":
            raise ValueError(f"drafts: expected a 1-D integer array of the K first tokens, got shape {d.shape}")
        x = np.empty((d.size, self.gamma), dtype=np.int64)
        x[:, 0] = d
        if self.gamma > 1:  # continuations: i.i.d. from the same q (memoryless draft)
            x[:, 1:] = rng.choice(q.size, size=(d.size, self.gamma - 1), p=q)
        out = _block(p, q, x, lambda a: bool(rng.random() < a))
        return out if isinstance(out, int) else int(rng.choice(p.size, p=out))

    def __repr__(self) -> str:
        return f"SpecTrGBV(gamma={self.gamma})"


def first_token_law(p: Any, q: Any, K: int, gamma: int = 2) -> NDArray[np.float64]:
    """The exact law of the first token :class:`SpecTrGBV` emits: K i.i.d. candidate sequences of
    ``gamma`` tokens from q, every accept / reject path enumerated (small V, K and gamma only).

    Raises ValueError where the engine would sample from an all-zero residual (it crashes there)
    on a path of probability above 1e-12; paths below that (an acceptance of 1 - 1e-16 by
    rounding) are dropped."""
    p = as_distribution("p", p, ndim=(1,))
    q = as_distribution("q", q, ndim=(1,))
    if p.size != q.size:
        raise ValueError(f"p, q: sizes {p.size} and {q.size} differ")
    V = p.size
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise ValueError(f"K: expected a positive integer, got {K!r}")
    SpecTrGBV(gamma)  # range check of gamma
    support = np.flatnonzero(q > 0)
    if support.size ** (K * gamma) > _MAX_PATHS:
        raise ValueError(f"K, gamma: {support.size}^{K * gamma} candidate sets is too many to enumerate")
    law = np.zeros(V)
    for flat in itertools.product(support, repeat=K * gamma):
        x = np.array(flat, dtype=np.int64).reshape(K, gamma)
        stack: list[tuple[bool, ...]] = [()]
        while stack:  # replay the block with a fixed prefix of decisions; branch at the next one
            replay = _Replay(stack.pop(), float(np.prod(q[x])))
            try:
                out = _block(p, q, x, replay)
            except _Branch:
                stack.extend(replay.branches)
                continue
            except ValueError:  # the engine's crash: only rounding-level paths may reach it here
                if replay.weight > 1e-12:
                    raise
                continue
            if isinstance(out, int):
                law[out] += replay.weight
            else:
                law += replay.weight * out
    return law


#: The smallest configuration the repository runs (gamma = 2), for ``mdsd-fast audit``.
verify = SpecTrGBV(2)
#: The final acceptance step alone (gamma = 1).
verify_gamma1 = SpecTrGBV(1)
