"""Verifier simulation throughput: draft + verify steps per second, in C++, 1 and 2 threads.

Run:  python bench/verifiers/simulation_throughput.py [--samples 2000000] [--json bench/results/verifiers/simulation_throughput.json]

Each row times mf.acceptance(name, p, q, n, exact=False, samples=S) (drafting with the verifier's
own scheme, then verification, then the estimate) on one pair, with threads=1 and threads=2
alternately; the median of each is kept.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import mdsd_fast as mf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support.io import write_rows  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    print("| V | verifier | n | M steps/s, 1 thread | M steps/s, 2 threads | speed-up |")
    print("|---|---|---|---|---|---|")
    for V in (1_000, 49_152):
        rng = np.random.default_rng(0)
        p = rng.dirichlet(np.full(V, 0.5))
        q = 0.5 * p[rng.permutation(V)] + 0.5 * rng.dirichlet(np.full(V, 0.5))
        for name, v in mf.verifiers.items():
            for n in (1, 2, 4, 8):
                if v.fixed_n is not None and n != v.fixed_n:
                    continue
                if v.fixed_n is None and n == 1:
                    continue
                scheme = "greedy" if name == "optimal-lp" else None  # the LP route needs few draft sets
                if name == "optimal-lp" and V > 1_000:
                    continue
                S = args.samples
                mf.acceptance(name, p, q, n, exact=False, samples=10_000, scheme=scheme)  # warm-up
                t1, t2 = [], []
                for _ in range(args.repeats):
                    for th, acc in ((1, t1), (2, t2)):
                        t0 = time.perf_counter()
                        mf.acceptance(name, p, q, n, exact=False, samples=S, scheme=scheme, threads=th, rng=1)
                        acc.append(time.perf_counter() - t0)
                m1, m2 = S / statistics.median(t1) / 1e6, S / statistics.median(t2) / 1e6
                print(f"| {V:,} | {name} | {n} | {m1:.1f} | {m2:.1f} | {m2 / m1:.2f}x |", flush=True)
                rows.append(dict(V=V, verifier=name, n=n, msteps_1=m1, msteps_2=m2))
    if args.json:
        write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
