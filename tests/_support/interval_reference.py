"""Brute force over completions of a truncated row, for tests/intervals/test_intervals.py (small V only).

A completion adds r >= 0 on the unlogged tokens with r <= t (the smallest logged value) and
sum r = u (the unseen mass). These sets are capped simplices; their vertices are the greedy fills
along every order of the unlogged tokens (all at t but one remainder), and every completion is a
mixture of vertices. This module is deliberately independent of mdsd_fast.intervals.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray


def vertices(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """All vertices of the completion polytope of a logged row x (rows of the result)."""
    unseen = np.flatnonzero(x == 0)
    u = max(0.0, 1.0 - float(x.sum()))
    t = float(x[x > 0].min())
    out = set()
    for order in itertools.permutations(unseen):
        y = x.copy()
        left = u
        for j in order:
            y[j] = min(t, left)
            left -= y[j]
        out.add(tuple(np.round(y, 15)))
    return np.array(sorted(out))


def sample(verts: NDArray[np.float64], k: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """k random completions: Dirichlet mixtures of the vertices (every completion is one)."""
    w = rng.dirichlet(np.full(len(verts), 0.3), size=k)
    return w @ verts
