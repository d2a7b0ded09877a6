"""alpha*_wor on real and held-out rows against numpy.argsort (the kernel alone, one thread).

Run:  python bench/bound/wor_kernel_real_rows.py [--ns 4 8] [--step 18] [--heldout 40] [--repeats 5] [--json OUT]

builds/roofline.py times synthetic rows (_support.rows.llm_like). The without-replacement kernel's time
depends on the row (how many prefixes its scan must integrate), so this times it on every --step-th
shipped row (``mdsd_fast.load_dataset()``, renormalised) and on --heldout rows of tests/_support/heldout.py
(seed 0): ``_core.bound.dual_batch`` on the validated row, alternating with ``numpy.argsort`` of V float64
values, this thread's CPU time, min of --repeats (steadier on a shared machine, see
_support.timing.side_by_side). Prints one markdown row per (set, n): mean / max ms and the median / p90
/ max of kernel / argsort.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for _support
from _support import tests_on_path  # noqa: E402
from _support.timing import side_by_side  # noqa: E402

tests_on_path()

import mdsd_fast as mf  # noqa: E402
from heldout import heldout_rows  # noqa: E402
from mdsd_fast import _core  # noqa: E402
from mdsd_fast.inputs.pairs import as_pair  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--step", type=int, default=18, help="every k-th shipped row (default 18 -> 30 rows)")
    ap.add_argument("--heldout", type=int, default=40, help="held-out rows of seed 0 (default 40)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ds = mf.load_dataset()
    P, Q = ds.dense(renormalize=True)
    sets = {"shipped": [(P[i], Q[i]) for i in range(0, len(ds), args.step)]}
    if args.heldout:
        Ph, Qh, _ = heldout_rows(args.heldout, seed=0)
        sets["held-out"] = list(zip(Ph, Qh, strict=True))
    x = np.random.default_rng(0).standard_normal(P.shape[1])
    out: dict[str, dict[str, float]] = {}
    print("| rows | n | count | mean ms | max ms | median / argsort | p90 | max |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in sets.items():
        for n in args.ns:
            ratios, times = [], []
            for p, q in rows:
                if int((q > 0).sum()) < n:
                    continue
                p2, q2, _ = as_pair(p[None], q[None])
                tk, ta = side_by_side(
                    lambda: _core.bound.dual_batch(p2, q2, n, "wor", "auto", False, 1),  # noqa: B023
                    lambda: np.argsort(x),
                    args.repeats,
                    time.thread_time,
                    min,
                )
                ratios.append(tk / ta)
                times.append(tk * 1e3)
            r, t = np.array(ratios), np.array(times)
            out[f"{name} n={n}"] = {
                "rows": float(r.size),
                "mean_ms": float(t.mean()),
                "max_ms": float(t.max()),
                "median_ratio": float(np.median(r)),
                "p90_ratio": float(np.quantile(r, 0.9)),
                "max_ratio": float(r.max()),
            }
            print(
                f"| {name} | {n} | {r.size} | {t.mean():.2f} | {t.max():.2f} | {np.median(r):.2f} | "
                f"{np.quantile(r, 0.9):.2f} | {r.max():.2f} |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
