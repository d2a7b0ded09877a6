"""The wor route's preparation with the checkpointed race pass without e (default) against the old form
with every token's e (``_testing.race_pass_keeps_e(True)``), side by side in one process.

Run:  python bench/bench_wor_pass_forms.py [--ns 2,3,4,8] [--step 18] [--heldout 40] [--reps 2]

Rows as bench_wor_route.py (every --step-th shipped row, --heldout rows of tests/heldout.py seed 0).
Per row and form: the best of --reps thread CPU times (ms) of the timed call of bench_wor_route.py,
the two forms alternating row by row; also whether the route's work spent and acceptance agree.
Prints p50 / p90 / p99 / max per (set, n) for both forms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mdsd_fast as mf
from mdsd_fast import _core

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from heldout import heldout_rows  # noqa: E402


def timed(p2: np.ndarray, q2: np.ndarray, n: int, keep_e: bool, reps: int) -> tuple[float, float, float]:
    _core._testing.race_pass_keeps_e(keep_e)
    best = float("inf")
    for _ in range(reps):
        c0 = time.thread_time()
        vb = _core.VerifierBatch("sweep", p2, q2, n, "wor", None, 1, mf.WOR_WORK_BUDGET)
        best = min(best, (time.thread_time() - c0) * 1e3)
    _core._testing.race_pass_keeps_e(False)
    return best, float(vb.route()["work"][0]), float(vb.exact(2e8, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", default="2,3,4,8")
    ap.add_argument("--step", type=int, default=18)
    ap.add_argument("--heldout", type=int, default=40)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    ds = mf.load_dataset()
    idx = np.arange(0, len(ds), a.step)
    hp, hq, _ = heldout_rows(a.heldout, 0)
    sets = {
        "shipped": list(zip(np.asarray(ds.p[idx], np.float64), np.asarray(ds.q[idx], np.float64), strict=True)),
        "held-out": list(zip(hp, hq, strict=True)),
    }
    print(
        "| rows | n | old (with e) p50 / p90 / p99 / max | new (without e) p50 / p90 / p99 / max | same work | same acc |"
    )
    print("|---|---|---|---|---|---|")
    for name, rows in sets.items():
        for n in [int(x) for x in a.ns.split(",")]:
            old, new, sw, sa = [], [], 0, 0
            for p, q in rows:
                if np.count_nonzero(q) < n:
                    continue
                p2 = np.ascontiguousarray((p / p.sum())[None, :])
                q2 = np.ascontiguousarray((q / q.sum())[None, :])
                to, wo, ao = timed(p2, q2, n, True, a.reps)
                tn, wn, an = timed(p2, q2, n, False, a.reps)
                old.append(to)
                new.append(tn)
                sw += wo == wn
                sa += ao == an
            f = " / ".join
            po = f(f"{np.percentile(old, x):.1f}" for x in (50, 90, 99, 100))
            pn = f(f"{np.percentile(new, x):.1f}" for x in (50, 90, 99, 100))
            print(f"| {name} | {n} | {po} | {pn} | {sw}/{len(old)} | {sa}/{len(old)} |", flush=True)


if __name__ == "__main__":
    main()
