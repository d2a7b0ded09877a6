"""alpha*_wor as n grows (2 to 64) on shipped rows, before and after the early stop: time and exponent in n.

Run:  python bench/bound/wor_growth_in_n.py [--ns 2 4 8 16 32 64] [--step 36] [--repeats 3] [--runs 3] [--json OUT]

Per shipped row (every --step-th of ``mdsd_fast.load_dataset()``, renormalised, V = 49,152 as
shipped) and n, in turn (this thread's CPU time, min of --repeats, the three calls interleaved):

- before: ``_core._testing.wor_alpha_scan(p, q, n, "nostop")``, the chord scan without the early stop of
  bound/wor_stop.hpp (the kernel as it was; the same bits as after, tests/bound/test_wor_stop.py);
- after:  ``_core._testing.wor_alpha_scan(p, q, n, "chord")``, the shipped scan (the same validation);
- iid:    ``_core.bound.dual_batch(p, q, n, "iid", "auto", False, 1)``.

(n <= 3 here is the race integral; the public kernel uses its exact n = 2, 3 forms there.) Each run
prints one markdown row per n: median ms over rows of each, the median over rows of before / after
and of after / iid, and the exponent of the median time in n between consecutive n
(log(t2 / t1) / log(n2 / n1)), before and after; --runs repeats the table (the machine is shared:
the spread between runs says how much to trust a figure). The load average is printed with each run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for _support
from _support.timing import machine_info  # noqa: E402

import mdsd_fast as mf  # noqa: E402
from mdsd_fast import _core  # noqa: E402
from mdsd_fast.inputs.pairs import as_pair  # noqa: E402


def _time3(fs, repeats: int) -> list[float]:
    ts = [[], [], []]
    for f in fs:
        f()  # warm-up
    for r in range(repeats):
        order = (0, 1, 2) if r % 2 == 0 else (2, 1, 0)
        for k in order:
            t0 = time.thread_time()
            fs[k]()
            ts[k].append(time.thread_time() - t0)
    return [min(t) * 1e3 for t in ts]


def one_run(rows: list[tuple[np.ndarray, np.ndarray]], ns: list[int], repeats: int) -> dict[int, dict[str, float]]:
    scan = _core._testing.wor_alpha_scan
    res: dict[int, dict[str, float]] = {}
    for n in ns:
        tb, ta, ti = [], [], []
        for p, q in rows:
            if int((q > 0).sum()) < n:
                continue
            b, a, i = _time3(
                [
                    lambda: scan(p, q, n, "nostop"),  # noqa: B023
                    lambda: scan(p, q, n, "chord"),  # noqa: B023
                    lambda: _core.bound.dual_batch(p[None], q[None], n, "iid", "auto", False, 1),  # noqa: B023
                ],
                repeats,
            )
            tb.append(b)
            ta.append(a)
            ti.append(i)
        tb_, ta_, ti_ = np.array(tb), np.array(ta), np.array(ti)
        res[n] = {
            "rows": len(tb),
            "before_median_ms": float(np.median(tb_)),
            "after_median_ms": float(np.median(ta_)),
            "before_mean_ms": float(tb_.mean()),
            "after_mean_ms": float(ta_.mean()),
            "iid_median_ms": float(np.median(ti_)),
            "median_before_over_after": float(np.median(tb_ / ta_)),
            "mean_before_over_mean_after": float(tb_.mean() / ta_.mean()),
            "median_after_over_iid": float(np.median(ta_ / ti_)),
        }
    prev = None
    for n in ns:
        if prev is not None:
            for k in ("before", "after"):
                t1, t2 = res[prev][f"{k}_mean_ms"], res[n][f"{k}_mean_ms"]
                res[n][f"exponent_{k}"] = float(np.log(t2 / t1) / np.log(n / prev))
        prev = n
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    ap.add_argument("--step", type=int, default=36, help="every k-th shipped row (default 36 -> 15 rows)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ds = mf.load_dataset()
    P, Q = ds.dense(renormalize=True)
    rows = []
    for i in range(0, len(ds), args.step):
        p2, q2, _ = as_pair(P[i][None], Q[i][None])
        rows.append((np.ascontiguousarray(p2[0]), np.ascontiguousarray(q2[0])))
    out: dict[str, object] = {"machine": machine_info(), "loadavg_start": os.getloadavg(), "runs": []}
    print(
        f"{len(rows)} shipped rows; core {_core.__name__} (MDSD_FAST_ISA={os.environ.get('MDSD_FAST_ISA', 'auto')}); load {os.getloadavg()}"
    )
    for r in range(args.runs):
        res = one_run(rows, args.ns, args.repeats)
        out["runs"].append({str(k): v for k, v in res.items()})  # type: ignore[union-attr]
        print(f"\nrun {r + 1} (load {os.getloadavg()[0]:.1f})")
        print(
            "| n | rows | before mean ms | after mean ms | before / after (of means; median row) | iid median ms |"
            " after / iid | exponent before | exponent after |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for n in args.ns:
            x = res[n]
            eb, ea = x.get("exponent_before"), x.get("exponent_after")
            print(
                f"| {n} | {x['rows']} | {x['before_mean_ms']:.2f} | {x['after_mean_ms']:.2f} | "
                f"{x['mean_before_over_mean_after']:.2f}; {x['median_before_over_after']:.2f} | {x['iid_median_ms']:.3f} | "
                f"{x['median_after_over_iid']:.0f} | {'' if eb is None else f'{eb:.2f}'} | {'' if ea is None else f'{ea:.2f}'} |",
                flush=True,
            )
    out["loadavg_end"] = os.getloadavg()
    print(f"load at end {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
