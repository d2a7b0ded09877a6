"""acceptance_bounds for "wor" on truncated rows: the bucket low end and the minimum over every H
(docs/guide/intervals.md §2, docs/design/intervals.md §3.2) against the routes they replace, on held-out rows.

Run:  PYTHONPATH=python python studies/wor_bounds_vs_replaced.py [--rows 256]

The rows are generated here and are not the ones the tests or bench/logs/stream_positions.py use: its LLM-like
top-20 rows drawn from another seed (V = 49,152, 5% unseen per side), and Dirichlet rows cut to
their top 20 (V = 2,000). For each set and n, the old low end is alpha*_wor with q's unseen mass on
J phantoms minus C(n, 2) / J (J = 8,192 at n = 2, 32,768 at n = 4) (the route before), the old high end the candidate search
(6 extreme completions and 12 Frank-Wolfe steps); both are still in the package and computed in
the same process. Printed: the mean widths, the tails of (new low - old low) and
(old high - new high) — both must be >= 0 up to rounding —, and CPU-seconds per 1,000 rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # for _support

from _support.rows import K, V, synth  # noqa: E402

import mdsd_fast as mf  # noqa: E402
from mdsd_fast.intervals import bounds as iv  # noqa: E402
from mdsd_fast.intervals import ends  # noqa: E402
from mdsd_fast.intervals.support import column_groups, dense_parts  # noqa: E402


def old_j(n: int) -> int:
    """The J-phantom route's J: the power of two >= C(n, 2) / 2e-4 (32,768 at n = 4)."""
    return int(2 ** np.ceil(np.log2(max(1.0, n * (n - 1) / 2 / 2e-4))))


def llm_rows(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """bench/logs/stream_positions.py's synthetic rows (another seed), top 20 with 5% of each side's mass unseen, dense."""
    p, q = synth(np.random.default_rng(seed), 4 * rows)
    out = []
    for x in (p, q):
        ids, val = x[1].reshape(-1, K), 0.95 * x[2].reshape(-1, K)
        d = np.zeros((ids.shape[0], V))
        np.put_along_axis(d, ids, val, axis=1)
        out.append(d)
    ok = np.flatnonzero(
        (np.where(out[0] > 0, out[0], 1).min(1) * (V - K) > 0.05 * 1.01)
        & (np.where(out[1] > 0, out[1], 1).min(1) * (V - K) > 0.05 * 1.01)
    )[:rows]
    return out[0][ok], out[1][ok]


def dirichlet_rows(rows: int, seed: int, Vd: int = 2000, k: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        full = rng.dirichlet(np.full(Vd, 0.05), size=rows)
        cut = np.zeros_like(full)
        top = np.argsort(-full, axis=1, kind="stable")[:, :k]
        np.put_along_axis(cut, top, np.take_along_axis(full, top, 1), 1)
        out.append(cut)
    return out[0], out[1]


def old_bounds(p: np.ndarray, q: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The routes before: J-phantom low, candidate-search high (both with BOUND_SLACK)."""
    lo = np.empty(len(p))
    J = old_j(n)
    for r in range(len(p)):
        uq = 1 - q[r].sum()
        pt = np.concatenate([p[r], [1 - p[r].sum()], np.zeros(J)])
        qt = np.concatenate([q[r], [0.0], np.full(J, uq / J)])
        lo[r] = float(mf.optimal_acceptance(pt, qt, n, "wor")) - (n * (n - 1) / 2 / J if uq > 0 else 0.0)
    P, Q = dense_parts("p", p, ends.COMPLETE_TOL), dense_parts("q", q, ends.COMPLETE_TOL)
    hi = np.empty(len(p))
    for rows, pg, qg in column_groups(P, Q, p.shape[1], np.arange(len(p)), ends._Log, ends.COMPRESS_KEEP):
        hi[rows] = ends._high(pg, qg, n, "wor", 0, np.zeros(pg.x.shape, dtype=bool), ends.SEARCH_STEPS)[0]
    return np.clip(lo - iv.BOUND_SLACK, 0, 1), np.clip(hi + iv.BOUND_SLACK, 0, 1)


def tail(x: np.ndarray) -> str:
    q = np.quantile(x, [0.0, 0.5, 0.9, 0.99, 1.0])
    return " / ".join(f"{v:.2e}" for v in q)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=256)
    a = ap.parse_args()
    print(
        "| rows | n | mean width old -> new | new low - old low (min / median / p90 / p99 / max) "
        "| old high - new high (same) | CPU-s per 1,000 rows, new |"
    )
    print("|---|---|---|---|---|---|")
    for name, (p, q) in (
        ("LLM-like top 20, V = 49,152", llm_rows(a.rows, 7)),
        ("Dirichlet(0.05) top 20, V = 2,000", dirichlet_rows(a.rows, 8)),
    ):
        for n in (2, 4):
            t0 = time.process_time()
            lo, hi = mf.acceptance_bounds(p, q, n, "wor")
            dt = time.process_time() - t0
            olo, ohi = old_bounds(p, q, n)
            print(
                f"| {name} ({len(p)}) | {n} | {np.mean(ohi - olo):.4f} -> {np.mean(hi - lo):.4f} | {tail(lo - olo)} "
                f"| {tail(ohi - hi)} | {1000 * dt / len(p):.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
