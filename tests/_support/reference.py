"""Deliberately independent brute-force references for the tests (pure numpy/itertools).

Nothing here calls mdsd_fast: these are the "third opinion" against which the C++ dual kernels and
the HiGHS flow LP are both checked.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import numpy as np


def tuple_law(q: np.ndarray, n: int, scheme: str) -> Iterable[tuple[tuple[int, ...], float]]:
    """Every ordered draft tuple with its probability under the scheme."""
    V = q.shape[-1]
    if scheme == "iid":
        for t in itertools.product(range(V), repeat=n):
            w = float(np.prod([q[i] for i in t]))
            if w > 0:
                yield t, w
    elif scheme == "wor":
        for t in itertools.permutations(range(V), n):
            w = 1.0
            for k, i in enumerate(t):
                if q[i] == 0:
                    w = 0.0
                    break
                # the mass not yet drawn, summed directly (1 - used cancels when it is small)
                w *= q[i] / math.fsum(q[j] for j in range(V) if j not in t[:k])
            if w > 0:
                yield t, w
    elif scheme == "greedy":
        order = sorted(range(V), key=lambda i: (-q[i], i))
        T = tuple(order[: n - 1])
        rest = math.fsum(q[i] for i in range(V) if i not in T)  # 1 - q(T) would cancel
        for x in range(V):
            if x in T or q[x] == 0:
                continue
            yield T + (x,), q[x] / rest
    elif scheme == "topk":
        order = sorted(range(V), key=lambda i: (-q[i], i))
        yield tuple(sorted(order[:n])), 1.0
    elif scheme.startswith("top"):  # "top<m>+iid" / "top<m>+wor": T, then n - m draws from q over V \ T
        m, rest_scheme = int(scheme[3 : scheme.index("+")]), scheme[scheme.index("+") + 1 :]
        order = sorted(range(V), key=lambda i: (-q[i], i))
        T = tuple(sorted(order[:m]))
        rest = math.fsum(q[i] for i in range(V) if i not in T)
        qr = np.array([0.0 if i in T else q[i] / rest for i in range(V)])
        for t, w in tuple_law(qr, n - m, rest_scheme):
            yield T + t, w
    elif scheme == "independent":
        for t in itertools.product(range(V), repeat=n):
            w = float(np.prod([q[k, i] for k, i in enumerate(t)]))
            if w > 0:
                yield t, w
    else:
        raise ValueError(scheme)


def set_law(tuples: Iterable[tuple[tuple[int, ...], float]]) -> dict[int, float]:
    """Aggregate tuples into draft sets, as bit masks."""
    law: dict[int, float] = {}
    for t, w in tuples:
        m = 0
        for i in t:
            m |= 1 << i
        law[m] = law.get(m, 0.0) + w
    return law


def brute_alpha(p: np.ndarray, law: dict[int, float]) -> tuple[float, int]:
    """alpha* = 1 + min over all 2^V subsets H of p(H) - Pr[S subset of H]; returns (alpha*, argmin mask)."""
    V = p.shape[0]
    masks = np.array(list(law.keys()), dtype=np.int64)
    w = np.array(list(law.values()))
    H = np.arange(1 << V, dtype=np.int64)
    inside = (masks[None, :] & ~H[:, None]) == 0
    Q = inside @ w
    bits = (H[:, None] >> np.arange(V)[None, :]) & 1
    pH = bits @ p
    F = pH - Q
    k = int(np.argmin(F))
    return float(min(1.0, 1.0 + F[k])), k


def q_of(law: dict[int, float], H: Iterable[int]) -> float:
    """Pr[all drafts in H] under a set law."""
    hm = 0
    for i in H:
        hm |= 1 << int(i)
    return float(sum(w for m, w in law.items() if m & ~hm == 0))


def random_case(rng: np.random.Generator, V: int) -> tuple[np.ndarray, np.ndarray]:
    """Dirichlet pair with concentrations in [0.1, 3], random zeros in p and q, and sometimes ties."""
    conc = rng.uniform(0.1, 3.0)
    p = rng.dirichlet(np.full(V, conc))
    q = rng.dirichlet(np.full(V, rng.uniform(0.1, 3.0)))
    kind = rng.integers(0, 5)
    if kind == 1 and V > 2:  # zeros in p
        p[rng.choice(V, size=rng.integers(1, V - 1), replace=False)] = 0.0
    elif kind == 2 and V > 2:  # zeros in q
        q[rng.choice(V, size=rng.integers(1, V - 1), replace=False)] = 0.0
    elif kind == 3 and V > 2:  # tied ratios: q proportional to p on a subset
        idx = rng.choice(V, size=rng.integers(2, V), replace=False)
        q[idx] = p[idx] * rng.uniform(0.5, 2.0)
    elif kind == 4:  # tied values
        q = np.round(q * 4) + 1.0
        p = np.round(p * 4)
        if p.sum() == 0:
            p[0] = 1.0
    p = p / p.sum()
    q = q / q.sum()
    return p, q
