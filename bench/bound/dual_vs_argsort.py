"""alpha* (fast dual) against numpy.argsort of the same V float64 values, measured side by side.

Run:  python bench/bound/dual_vs_argsort.py [--repeats 30] [--json bench/results/bound/dual_vs_argsort.json]

Also times a plain numpy implementation of the same algorithms (bench/_support/numpy_dual.py) and the
throughput of a (B, V) batch on one thread against two.

For each V and each kernel, the kernel and argsort are timed alternately in the same loop and the
median of each is kept, so the ratio holds on a noisy shared machine. argsort is the floor of any
sort-based method: the dual has to order the tokens by p/q and then scan the prefixes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import mdsd_fast as mf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for _support
from _support import numpy_dual  # noqa: E402
from _support.rows import llm_like  # noqa: E402
from _support.timing import machine_info, side_by_side  # noqa: E402

GOALS = {("iid", 2): 1.5, ("iid", 4): 1.5, ("iid", 8): 1.5, ("wor", 4): 5.0, ("wor", 8): 10.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256, help="rows in the batch throughput test")
    ap.add_argument("--sizes", default="4096,49152,151936")
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    info = machine_info()
    print("machine:", ", ".join(f"{k}={v}" for k, v in info.items()))
    sizes = [int(v) for v in args.sizes.split(",")]
    rows = []
    print("\n| V | kernel | alpha* | kernel ms | argsort ms | kernel / argsort | goal | numpy ms | numpy / kernel |")
    print("|---|---|---|---|---|---|---|---|---|")
    for V in sizes:
        rng = np.random.default_rng(V)
        p, q = llm_like(rng, V)
        ratio_values = p / q
        for scheme, n in [("iid", n) for n in (2, 4, 8)] + [("wor", n) for n in (2, 4, 8)]:
            alpha = mf.optimal_acceptance(p, q, n, scheme)
            tk, ta = side_by_side(
                lambda: mf.optimal_acceptance(p, q, n, scheme, threads=1),
                lambda: np.argsort(ratio_values),
                args.repeats,
            )
            ref = numpy_dual.alpha_iid if scheme == "iid" else numpy_dual.alpha_wor
            slow = scheme == "wor" and n > 2
            t0 = time.perf_counter()
            a_np = ref(p, q, n)
            tn = time.perf_counter() - t0
            if not slow:
                tn = side_by_side(lambda: ref(p, q, n), lambda: None, max(3, args.repeats // 3))[0]
            if abs(a_np - alpha) > 1e-9:
                print(f"  numpy and mdsd_fast disagree: {a_np} vs {alpha}", file=sys.stderr)
            goal = GOALS.get((scheme, n))
            ratio = tk / ta
            mark = "" if goal is None else (f"<= {goal:g}x " + ("met" if ratio <= goal else "MISSED"))
            print(
                f"| {V:,} | {scheme} n={n} | {alpha:.6f} | {1e3 * tk:.2f} | {1e3 * ta:.2f} | {ratio:.2f}x | {mark} "
                f"| {1e3 * tn:.1f} | {tn / tk:.0f}x |",
                flush=True,
            )
            rows.append(
                dict(
                    V=V, scheme=scheme, n=n, alpha=alpha, kernel_s=tk, argsort_s=ta, ratio=ratio, goal=goal, numpy_s=tn
                )
            )
    # Batch throughput: B rows, one thread vs two threads (the goal is >= 1.8x on 2 cores).
    print("\n| batch | kernel | 1 thread s | 2 threads s | speed-up | goal |")
    print("|---|---|---|---|---|---|")
    for V in sizes:
        B = args.batch
        rng = np.random.default_rng(1)
        P = np.empty((B, V))
        Q = np.empty((B, V))
        for b in range(B):
            P[b], Q[b] = llm_like(rng, V)
        for scheme, n in (("iid", 4), ("wor", 4)):
            t1, t2 = side_by_side(
                lambda: mf.optimal_acceptance(P, Q, n, scheme, threads=1),  # noqa: F821 (P, Q: del'd only after the loop body)
                lambda: mf.optimal_acceptance(P, Q, n, scheme, threads=2),  # noqa: F821
                3,
            )
            sp = t1 / t2
            print(
                f"| {B}x{V:,} | {scheme} n={n} | {t1:.3f} | {t2:.3f} | {sp:.2f}x | >= 1.8x {'met' if sp >= 1.8 else 'MISSED'} |",
                flush=True,
            )
            rows.append(dict(V=V, B=B, scheme=scheme, n=n, one_thread_s=t1, two_threads_s=t2, speedup=sp))
        del P, Q
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
