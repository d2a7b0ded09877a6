""" "optimal" with without-replacement drafts at its default budget, on held-out real rows.

Run:  python bench/verifiers/optimal_wor_heldout.py ROWS.npz [--ns 2 3 4 8] [--schemes wor top1+wor]
                                                   [--step 1] [--json OUT]

ROWS.npz is a dataset written by ``mdsd-fast extract`` from prompts the route was never tuned on
(bench/verifiers/heldout_prompts.jsonl; the command is in docs/guide/verifiers.md). Per row
(renormalised, one thread, one row per call, rows one after the other):

- ``mf.acceptance("optimal", p, q, n, scheme=s, threads=1)`` with the default budget, timed in this
  thread's CPU time: certified when it returns (the route checks acceptance against alpha* within 1e-9),
  refused when it raises ValueError (counted: the refusals whose message names the scheme asked for and its
  alpha*); --budget gives "optimal" another budget than its default;
- the report's column: ``mf.acceptance("sweep", p, q, n, scheme=s, threads=1)`` at its own, bounded
  default budget, certified when alpha* (``mf.optimal_acceptance``) - acceptance <= 1e-9.

Output: one markdown row per (scheme, n): rows, share certified by "optimal", p50 / p99 / max
time per position (ms), and the share "sweep" certifies. Rows whose q has too few tokens are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for _support
from _support.timing import machine_info  # noqa: E402

import mdsd_fast as mf  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows")
    ap.add_argument("--ns", type=int, nargs="+", default=[2, 3, 4, 8])
    ap.add_argument("--schemes", nargs="+", default=["wor", "top1+wor"])
    ap.add_argument("--step", type=int, default=1, help="every k-th row of the file")
    ap.add_argument("--budget", type=float, default=None, help='work budget of "optimal" (default: its own)')
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ds = mf.load_dataset(args.rows)
    P, Q = ds.dense(renormalize=True)
    P, Q = P[:: args.step], Q[:: args.step]
    load = os.getloadavg()
    out: dict[str, Any] = {"machine": machine_info(), "loadavg_start": load, "rows_file": os.path.basename(args.rows)}
    out["budget"] = args.budget
    print(f"{len(P)} rows of {args.rows}; load average at start {load[0]:.1f} on {os.cpu_count()} cores")
    print("| scheme | n | rows | optimal certifies | p50 ms | p99 ms | max ms | sweep certifies |")
    print("|---|---|---|---|---|---|---|---|")
    for sch in args.schemes:
        m = int(sch[3 : sch.index("+")]) if sch.startswith("top") else 0
        for n in args.ns:
            if n <= m:
                continue
            times, ok, sweep_ok, named, refusals = [], 0, 0, 0, []
            for p, q in zip(P, Q, strict=True):
                if int((q > 0).sum()) < n:
                    continue
                t0 = time.thread_time()
                try:
                    mf.acceptance("optimal", p, q, n, scheme=sch, threads=1, work_budget=args.budget)
                    ok += 1
                except ValueError as e:
                    msg = str(e)
                    named += f"'{sch}' drafts" in msg and f"alpha*_{sch} =" in msg
                    refusals.append(msg[:200])
                times.append(time.thread_time() - t0)
                a_sweep = mf.acceptance("sweep", p, q, n, scheme=sch, threads=1)
                sweep_ok += bool(mf.optimal_acceptance(p, q, n, sch, threads=1) - a_sweep <= 1e-9)
            t = np.array(times) * 1e3
            k = len(t)
            row = {
                "rows": k,
                "optimal_certified": ok / k,
                "p50_ms": float(np.median(t)),
                "p99_ms": float(np.quantile(t, 0.99)),
                "max_ms": float(t.max()),
                "sweep_certified": sweep_ok / k,
                "refusals_naming_the_scheme": named,
                "refusals": refusals[:5],
            }
            out[f"{sch} n={n}"] = row
            print(
                f"| {sch} | {n} | {k} | {ok / k:.1%} | {row['p50_ms']:.1f} | {row['p99_ms']:.0f} | "
                f"{row['max_ms']:.0f} | {sweep_ok / k:.1%} |",
                flush=True,
            )
    out["loadavg_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
