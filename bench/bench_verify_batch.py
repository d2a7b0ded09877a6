"""The engine case: one draft tuple per row, B = 256 rows at V = 49,152, verified by mf.verify.

Run:  python bench/bench_verify_batch.py [--B 256] [--repeats 3]

Side by side in one run, one thread: mf.verify (which takes the plan-free route of
cpp/include/mdsd/verifiers/direct.hpp for "sd", "rrs", "rrs-wor"), the same call through a prepared
plan per row (the route every verifier had before), the C++ direct kernel alone on validated rows,
the input validation alone, and the memory-stream floor (copying p and q once).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast._validate import as_pair
from mdsd_fast.verifiers import _prepare


def best(f, repeats: int) -> float:  # type: ignore[no-untyped-def]
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, default=256)
    ap.add_argument("--V", type=int, default=49_152)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    B, V = args.B, args.V
    L = rng.standard_normal((B, V)) * 3.0
    P = np.exp(L - L.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Q = np.exp(L + rng.standard_normal((B, V)) - L.max(axis=1, keepdims=True))
    Q /= Q.sum(axis=1, keepdims=True)
    P2, Q2, _ = as_pair(P, Q)
    bp, bq = np.empty_like(P2), np.empty_like(Q2)
    floor = best(lambda: (np.copyto(bp, P2), np.copyto(bq, Q2)), args.repeats)
    print(f"B = {B}, V = {V:,}, one thread; per row: floor (copy p and q) {floor / B * 1e6:.0f} µs")
    print(
        "| verifier | n | mf.verify µs/row | planned µs/row | kernel µs/row | validation µs/row | verify / planned | verify / floor |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, n in (("sd", 1), ("rrs", 4), ("rrs-wor", 4)):
        d = np.stack([mf.simulate(name, P[r], Q[r], n, 1, rng=r).drafts[0] for r in range(B)])
        t_verify = best(lambda: mf.verify(name, P, Q, d, rng=1, threads=1), args.repeats)

        def planned() -> None:
            batch, _ = _prepare(name, P, Q, n, None, 1)
            batch.verify(d, 1, 1)

        t_plan = best(planned, 1)
        t_kernel = best(lambda: _core.verify_direct(name, P2, Q2, d, 1, 1), args.repeats)
        t_val = best(lambda: as_pair(P, Q), args.repeats)
        print(
            f"| {name} | {n} | {t_verify / B * 1e6:.0f} | {t_plan / B * 1e6:.0f} | {t_kernel / B * 1e6:.0f} | "
            f"{t_val / B * 1e6:.0f} | {t_verify / t_plan:.2f} | {t_verify / floor:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
