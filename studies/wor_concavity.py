"""Is alpha*_wor concave along segments of the completions of truncated logs? (docs/design/intervals.md §3.3)

The i.i.d. bracket of §3.3 rests on the concavity of alpha*_iid in (p, q). For drafts without
replacement it is not known, so this measures it: for random top-k logs, random pairs of
completions x0, x1 (each side's unseen mass split by a Dirichlet draw, capped), alpha*_wor at 11
points of the segment; a second difference alpha(a) - 2 alpha(b) + alpha(c) > 0 (beyond 1e-11,
the evaluator's accuracy) at equally spaced a < b < c is a violation of concavity. Printed per
(V, n): segments, the share with a violation and the largest violation. The i.i.d. column is the
control (concave: it must show none).

    PYTHONPATH=python python studies/wor_concavity.py [--segments 400]
"""

from __future__ import annotations

import argparse

import numpy as np

import mdsd_fast as mf


def completion(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """A random completion of a logged row: the unseen mass on the unlogged tokens, each at most t."""
    free = np.flatnonzero(x == 0)
    u, t = 1 - x.sum(), x[x > 0].min()
    for _ in range(1000):
        r = rng.dirichlet(np.full(free.size, rng.choice([0.2, 1.0, 5.0]))) * u
        if r.max() <= t:
            c = x.copy()
            c[free] = r
            return c
    c = x.copy()
    c[free] = u / free.size  # the flat one fits whenever any does
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    s = np.linspace(0, 1, 11)
    print("| V | k | n | segments | iid: share violated / max | wor: share violated / max |")
    print("|---|---|---|---|---|---|")
    for V, k in ((8, 3), (40, 8), (400, 20)):
        for n in (2, 3, 4):
            worst = {"iid": [0, 0.0], "wor": [0, 0.0]}
            done = 0
            while done < a.segments:
                logs = []
                for _ in range(2):
                    full = rng.dirichlet(np.full(V, rng.choice([0.1, 0.5, 2.0])))
                    cut = np.zeros(V)
                    top = np.argsort(-full, kind="stable")[:k]
                    cut[top] = full[top]
                    logs.append(cut)
                if any(1 - x.sum() > x[x > 0].min() * (V - k) * 0.999 for x in logs):
                    continue
                ends = [(completion(rng, logs[0]), completion(rng, logs[1])) for _ in range(2)]
                P = np.array([(1 - w) * ends[0][0] + w * ends[1][0] for w in s])
                Q = np.array([(1 - w) * ends[0][1] + w * ends[1][1] for w in s])
                for scheme in ("iid", "wor"):
                    al = mf.optimal_acceptance(P, Q, n, scheme)
                    d2 = al[:-2] - 2 * al[1:-1] + al[2:]
                    v = float(d2.max())
                    if v > 1e-11:
                        worst[scheme][0] += 1
                        worst[scheme][1] = max(worst[scheme][1], v)
                done += 1
            cells = [f"{worst[sch][0] / done:.3f} / {worst[sch][1]:.1e}" for sch in ("iid", "wor")]
            print(f"| {V} | {k} | {n} | {done} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
