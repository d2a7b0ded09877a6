"""The engine case: one draft tuple per row, B = 256 rows at V = 49,152, verified by mf.verify.

Run:  python bench/verifiers/one_tuple_per_row.py [--B 256] [--repeats 3] [--optimal-rows 16]

Side by side in one run, one thread unless stated: mf.verify (the plan-free route of
cpp/include/mdsd/verifiers/direct*.hpp for "sd", "rrs", "rrs-wor", "kseq": validation fused into
the row's pass), the same call through a prepared plan per row (the route every verifier had
before), mf.verify on float32 input and with two threads, and the memory-stream floor: copying p
and q once (float64; the float32 floor is half of it). Then "optimal" (i.i.d. and without
replacement): mf.verify (for "iid" the plan-free route of shadow_verify.hpp, for "wor" a plan per
row) and the plan route (verifiers._verify_planned) against mf.optimal_acceptance on the same rows
(for "wor" on the rows its route certifies at the default work budget; it refuses the others).

One-thread columns are the calling thread's CPU time (time.thread_time: the kernels run in the
calling thread at threads=1), the best of --repeats rounds that each time the floor and every
route once, so a busy shared machine inflates all of them alike; the two-thread column is wall
time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mdsd_fast as mf
from mdsd_fast.verifiers.given_drafts import _verify_planned
from mdsd_fast.verifiers.run import _prepare

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support.rows import engine_rows as rows  # noqa: E402


def cpu(f) -> float:  # type: ignore[no-untyped-def]
    t0 = time.thread_time()
    f()
    return time.thread_time() - t0


def wall(f) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def certified(p: np.ndarray, q: np.ndarray, d: np.ndarray) -> bool:
    """Whether "optimal" (scheme "wor") serves this row at the default work budget."""
    try:
        mf.verify("optimal", p[None], q[None], d[None], scheme="wor", threads=1)
    except ValueError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--B", type=int, default=256)
    ap.add_argument("--V", type=int, default=49_152)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--optimal-rows", type=int, default=16, help="rows for the optimal verifier (its plans are slow)")
    ap.add_argument("--optimal-only", action="store_true", help="skip sd, rrs, rrs-wor and kseq")
    ap.add_argument(
        "--per-row", action="store_true", help="optimal iid: each row timed alone too (median, p90, max over the rows)"
    )
    args = ap.parse_args()
    B, V = args.B, args.V
    P, Q = rows(B, V)
    P32, Q32 = P.astype(np.float32), Q.astype(np.float32)
    bp, bq = np.empty_like(P), np.empty_like(Q)
    routes = () if args.optimal_only else (("sd", 1), ("rrs", 4), ("rrs-wor", 4), ("kseq", 4))
    drafts = {
        name: np.stack([mf.simulate(name, P[r], Q[r], n, 1, rng=r).drafts[0] for r in range(B)]) for name, n in routes
    }
    inf = float("inf")
    floor = inf
    t: dict[tuple[str, str], float] = {}
    for rep in range(args.repeats):  # interleaved: every route sees the same machine load
        floor = min(floor, cpu(lambda: (np.copyto(bp, P), np.copyto(bq, Q))))
        for name, n in routes:
            d = drafts[name]
            if rep == 0:  # slow: once

                def planned(name: str = name, n: int = n, d: np.ndarray = d) -> None:
                    batch, _ = _prepare(name, P, Q, n, None, 1)
                    batch.verify(d, 1, 1)

                t[name, "plan"] = cpu(planned)
            for key, f in (
                ("verify", lambda name=name, d=d: mf.verify(name, P, Q, d, rng=1, threads=1)),
                ("f32", lambda name=name, d=d: mf.verify(name, P32, Q32, d, rng=1, threads=1)),
            ):
                t[name, key] = min(t.get((name, key), inf), cpu(f))
            two = wall(lambda name=name, d=d: mf.verify(name, P, Q, d, rng=1, threads=2))
            t[name, "two"] = min(t.get((name, "two"), inf), two)
    us = 1e6 / B
    print(f"B = {B}, V = {V:,}; floor (copy float64 p and q once) {floor * us:.0f} µs per row, one thread")
    print()
    print(
        "| verifier | n | planned µs/row | mf.verify µs/row | float32 µs/row | 2 threads µs/row (wall) | speed-up | / floor |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, n in routes:
        tv = t[name, "verify"]
        print(
            f"| {name} | {n} | {t[name, 'plan'] * us:,.0f} | {tv * us:.0f} | {t[name, 'f32'] * us:.0f} | "
            f"{t[name, 'two'] * us:.0f} | {t[name, 'plan'] / tv:.1f}x | {tv / floor:.2f} |"
        )
    m = min(args.optimal_rows, B)
    print()
    print(f"optimal, n = 4, one thread: mf.verify against mf.optimal_acceptance on the same rows (of the first {m})")
    print()
    print("| scheme | rows | alpha* µs/row | planned µs/row | mf.verify µs/row | verify / alpha* |")
    print("|---|---|---|---|---|---|")
    for scheme, drafter in (("iid", "rrs"), ("wor", "rrs-wor")):
        d = np.stack([mf.simulate(drafter, P[r], Q[r], 4, 1, rng=r).drafts[0] for r in range(m)])
        sel = np.arange(m)
        if scheme == "wor":  # "optimal" refuses a row its route does not certify: time the rows it serves
            sel = np.array([r for r in range(m) if certified(P[r], Q[r], d[r])], dtype=np.int64)
        if sel.size == 0:
            print(f"| {scheme} | 0 of {m} | | refused | no row certified at the default work budget |")
            continue
        Ps, Qs, ds = P[sel], Q[sel], d[sel]
        t_star = t_opt = t_plan = inf
        for _ in range(args.repeats):  # interleaved, best of --repeats, as above
            t_star = min(t_star, cpu(lambda: mf.optimal_acceptance(Ps, Qs, 4, scheme=scheme, threads=1)))
            t_opt = min(t_opt, cpu(lambda: mf.verify("optimal", Ps, Qs, ds, scheme=scheme, threads=1)))
            t_plan = min(t_plan, cpu(lambda: _verify_planned("optimal", Ps, Qs, ds, scheme=scheme, threads=1)))
        k = sel.size
        print(
            f"| {scheme} | {k} of {m} | {t_star / k * 1e6:,.0f} | {t_plan / k * 1e6:,.0f} | {t_opt / k * 1e6:,.0f} | "
            f"{t_opt / t_star:.1f} |"
        )
        if scheme == "iid" and args.per_row:
            per_row(Ps, Qs, ds, args.repeats)
    return 0


def per_row(P: np.ndarray, Q: np.ndarray, d: np.ndarray, repeats: int) -> None:
    """Each row alone (best of repeats, interleaved): the tail of verify / alpha*, not only its mean."""
    inf = float("inf")
    ts, tv = np.full(len(P), inf), np.full(len(P), inf)
    for _ in range(repeats):
        for r in range(len(P)):
            p, q, dr = P[r : r + 1], Q[r : r + 1], d[r : r + 1]
            ts[r] = min(ts[r], cpu(lambda: mf.optimal_acceptance(p, q, 4, scheme="iid", threads=1)))
            tv[r] = min(tv[r], cpu(lambda: mf.verify("optimal", p, q, dr, scheme="iid", threads=1)))
    ratio = tv / ts
    print()
    print(f"optimal iid, each of the {len(P)} rows alone (one-row calls, best of {repeats}): median / p90 / max")
    for label, x, unit in (
        ("alpha* µs", ts * 1e6, ""),
        ("mf.verify µs", tv * 1e6, ""),
        ("verify / alpha*", ratio, "x"),
    ):
        med, p90, mx = np.median(x), np.percentile(x, 90), x.max()
        print(f"  {label:16s} {med:,.1f}{unit} / {p90:,.1f}{unit} / {mx:,.1f}{unit}")


if __name__ == "__main__":
    raise SystemExit(main())
