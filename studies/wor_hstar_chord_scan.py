"""The wor route's preparation with H* from the chord scan and its argmin check (the default)
against the scan of every prefix (``_testing.wor_prepare_scans_every_prefix(True)``, the form it replaced),
side by side in one process.

Run:  python studies/wor_hstar_chord_scan.py [--ns 4,2,3,8] [--step 18] [--heldout 40] [--reps 2]

Rows as verifiers/optimal_wor_route.py (every --step-th shipped row, renormalised; --heldout rows of
tests/heldout.py seed 0). Per row and form: the best of --reps thread CPU times (ms) of the timed call
of verifiers/optimal_wor_route.py (default budget), the two forms alternating row by row; also whether the work
spent, the plan's exact acceptance and alpha* agree (alpha*: the largest difference). Prints
p50 / p90 / p99 / max and the total per (set, n) for both forms.
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


def timed(p2: np.ndarray, q2: np.ndarray, n: int, every: bool, reps: int) -> tuple[float, float, float, float]:
    _core._testing.wor_prepare_scans_every_prefix(every)
    best = float("inf")
    try:
        for _ in range(reps):
            c0 = time.thread_time()
            vb = _core.VerifierBatch("sweep", p2, q2, n, "wor", None, 1, mf.WOR_WORK_BUDGET)
            best = min(best, (time.thread_time() - c0) * 1e3)
    finally:
        _core._testing.wor_prepare_scans_every_prefix(False)
    r = vb.route()
    return best, float(r["work"][0]), float(vb.exact(2e8, 1)[0]), float(r["alpha_star"][0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", default="4,2,3,8")
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
        "| rows | n | every prefix (before) p50 / p90 / p99 / max / total | chord + argmin check (after) | same work | same acc | max abs Δα* |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in [int(x) for x in a.ns.split(",")]:
        for name, rows in sets.items():
            old, new, sw, sa, ds_ = [], [], 0, 0, 0.0
            for p, q in rows:
                if np.count_nonzero(q) < n:
                    continue
                p2 = np.ascontiguousarray((p / p.sum())[None, :])
                q2 = np.ascontiguousarray((q / q.sum())[None, :])
                to, wo, ao, so = timed(p2, q2, n, True, a.reps)
                tn, wn, an, sn = timed(p2, q2, n, False, a.reps)
                old.append(to)
                new.append(tn)
                sw += wo == wn
                sa += ao == an
                ds_ = max(ds_, abs(so - sn))
            f = " / ".join
            po = f([*(f"{np.percentile(old, x):.1f}" for x in (50, 90, 99, 100)), f"{sum(old):.0f}"])
            pn = f([*(f"{np.percentile(new, x):.1f}" for x in (50, 90, 99, 100)), f"{sum(new):.0f}"])
            print(f"| {name} | {n} | {po} | {pn} | {sw}/{len(old)} | {sa}/{len(old)} | {ds_:.1e} |", flush=True)


if __name__ == "__main__":
    main()
