"""The full-vocabulary without-replacement route on shipped and on held-out rows: time and certification.

Run:  python bench/verifiers/optimal_wor_route.py [--ns 2,3,4,8] [--step 18] [--heldout 40] [--seed 0] [--knobs JSON]
                                     [--json OUT]

Per row (V = 49,152, one thread, rows one after the other in this one process):

- time:  ``_core.verifiers.VerifierBatch("sweep", p2, q2, n, "wor", None, 1)`` -- the preparation of the
         keep-policy verifier, i.e. the plan; p2, q2 = the row as C-contiguous (1, V) float64,
         renormalised. Wall time (ms) and the thread's CPU time (ms; less sensitive to a shared
         machine) are both recorded.
- acc:   ``.exact(2e8, 1)`` of that batch -- the plan's exact acceptance (not timed);
- alpha*: ``mdsd_fast.optimal_acceptance(p, q, n, "wor", threads=1)`` (not timed);
- gap = alpha* - acc; "certified" = gap <= 1e-9 (what the strict "optimal" verifier accepts).

Rows: (a) every --step-th shipped row (``mdsd_fast.load_dataset()``, the data the route was tuned
on), (b) --heldout rows of tests/_support/heldout.py (seed --seed; data it was never tuned on). Rows whose q
has fewer than n tokens are skipped.

Output (stdout, markdown): one summary table (median / p90 / p99 / max ms, certified share, mean
and max gap, per (set, n)), the slowest rows, and -- unless --per-row none -- every row's time, so
that "max time <= budget + overhead" can be checked row by row once the verifier takes a budget.
Progress goes to stderr. --json writes every row and the summary.

Budget: --budget is the route's work budget per row in grid operations (default: the package's
``mf.WOR_WORK_BUDGET``); each row also records the work it spent and whether the budget ran out
(``VerifierBatch.route()``), and the summary gives the largest work over the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import mdsd_fast as mf
from mdsd_fast import _core

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "_support"))
from heldout import describe, heldout_rows  # noqa: E402

CERT_TOL = 1e-9
EXACT_BUDGET = 2e8


def prepare(p2: np.ndarray, q2: np.ndarray, n: int, budget: float | None) -> Any:
    """The timed call: the keep-policy ("sweep") without-replacement verifier for one row."""
    return _core.verifiers.VerifierBatch(
        "sweep", p2, q2, n, "wor", None, 1, mf.WOR_WORK_BUDGET if budget is None else budget
    )


def measure_row(p: np.ndarray, q: np.ndarray, n: int, budget: float | None) -> dict[str, Any]:
    p2 = np.ascontiguousarray(p[None, :], dtype=np.float64)
    q2 = np.ascontiguousarray(q[None, :], dtype=np.float64)
    c0 = time.thread_time()
    t0 = time.perf_counter()
    b = prepare(p2, q2, n, budget)
    wall = (time.perf_counter() - t0) * 1e3
    cpu = (time.thread_time() - c0) * 1e3
    acc = float(b.exact(EXACT_BUDGET, 1)[0])
    star = float(mf.optimal_acceptance(p, q, n, "wor", threads=1))
    gap = star - acc
    route = b.route()
    return {
        "n": n,
        "ms": wall,
        "cpu_ms": cpu,
        "acceptance": acc,
        "alpha_star": star,
        "gap": gap,
        "certified": bool(gap <= CERT_TOL),
        "work": float(route["work"][0]),
        "out_of_budget": bool(route["out_of_budget"][0]),
        "order": route["best_order_name"][0],
    }


def shipped_rows(step: int) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    ds = mf.load_dataset()
    rows = np.arange(0, len(ds), step)
    P = np.asarray(ds.p[rows], dtype=np.float64)
    Q = np.asarray(ds.q[rows], dtype=np.float64)
    P /= P.sum(axis=1, keepdims=True)  # as the public API does (stored rows carry truncation ~1e-6)
    Q /= Q.sum(axis=1, keepdims=True)
    meta = [
        {"row": int(ds.meta[r]["row"]), "draft": ds.meta[r]["draft"], "temperature": float(ds.meta[r]["temperature"])}
        for r in rows
    ]
    return P, Q, meta


def label(kind: str, m: dict[str, Any]) -> str:
    if kind == "shipped":
        return f"row {m['row']} ({m['draft']}, T={m['temperature']:g})"
    k = "full" if m["top_k"] == 0 else f"top{m['top_k']}"
    return f"seed {m['seed']} idx {m['index']} ({m['mismatch']}, {k}, T={m['temperature']:g})"


def run_set(
    kind: str, P: np.ndarray, Q: np.ndarray, meta: list[dict[str, Any]], ns: list[int], budget: float | None
) -> list[dict[str, Any]]:
    d = describe(P, Q)
    out = []
    for n in ns:
        t_set = time.perf_counter()
        for i in range(P.shape[0]):
            if np.count_nonzero(Q[i]) < n:
                continue
            rec = measure_row(P[i], Q[i], n, budget)
            rec.update(
                set=kind,
                label=label(kind, meta[i]),
                meta=meta[i],
                overlap=float(d["overlap"][i]),
                entropy_p=float(d["entropy_p"][i]),
            )
            out.append(rec)
            print(
                f"  {kind} n={n} {rec['label']}: {rec['ms']:.1f} ms, gap {rec['gap']:.1e}", file=sys.stderr, flush=True
            )
        print(f"{kind} n={n}: {time.perf_counter() - t_set:.1f} s", file=sys.stderr, flush=True)
    return out


def summarise(recs: list[dict[str, Any]], budget: float | None) -> dict[str, Any]:
    ms = np.array([r["ms"] for r in recs])
    gaps = np.array([max(r["gap"], 0.0) for r in recs])
    s = {
        "rows": len(recs),
        "median_ms": float(np.median(ms)),
        "p90_ms": float(np.percentile(ms, 90)),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
        "max_cpu_ms": float(max(r["cpu_ms"] for r in recs)),
        "total_s": float(ms.sum() / 1e3),
        "certified": int(sum(r["certified"] for r in recs)),
        "mean_gap": float(gaps.mean()),
        "max_gap": float(gaps.max()),
    }
    b = mf.WOR_WORK_BUDGET if budget is None else budget
    s["out_of_budget"] = int(sum(r["out_of_budget"] for r in recs))
    s["max_work_over_budget"] = float(max(max(r["work"] - b, 0.0) for r in recs))
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="2,3,4,8", help="comma-separated draft counts (default 2,3,4,8)")
    ap.add_argument("--step", type=int, default=18, help="every k-th shipped row (0: none; default 18 -> 30 rows)")
    ap.add_argument("--heldout", type=int, default=40, help="held-out rows (default 40; 0: none)")
    ap.add_argument("--seed", type=int, default=0, help="held-out seed (default 0)")
    ap.add_argument("--start", type=int, default=0, help="first held-out row index (default 0)")
    ap.add_argument("--knobs", default="{}", help="JSON dict of heldout_rows knobs, e.g. '{\"store_tau\": 1e-6}'")
    ap.add_argument(
        "--budget",
        type=float,
        default=None,
        help="per-row work budget in grid operations (default: mf.WOR_WORK_BUDGET)",
    )
    ap.add_argument("--per-row", choices=("all", "none"), default="all", help="print every row's time")
    ap.add_argument("--slowest", type=int, default=10, help="how many slowest rows to list (default 10)")
    ap.add_argument("--json", default=None, metavar="OUT")
    args = ap.parse_args()
    ns = [int(x) for x in args.ns.split(",") if x.strip()]
    knobs = json.loads(args.knobs)
    for key in ("zipf", "noise", "temperatures", "top_ks", "mismatches"):
        if key in knobs:
            knobs[key] = tuple(knobs[key])

    # warm-up: first-call costs (imports, page faults of the workspace) stay out of the first row
    w = np.full(64, 1 / 64)
    prepare(w[None, :].copy(), w[None, :].copy(), 2, args.budget)

    t_all = time.perf_counter()
    recs: list[dict[str, Any]] = []
    sets = []
    if args.step > 0:
        sets.append(("shipped", shipped_rows(args.step)))
    if args.heldout > 0:
        sets.append(("held-out", heldout_rows(args.heldout, args.seed, start=args.start, **knobs)))
    for kind, (P, Q, meta) in sets:
        recs += run_set(kind, P, Q, meta, ns, args.budget)
    wall = time.perf_counter() - t_all

    step = f"every {args.step}th" if args.step > 0 else "none"
    print('## wor route ("sweep", scheme "wor") prepare time, one thread, V = 49,152\n')
    print(
        f"shipped: {step}; held-out: {args.heldout} rows of seed {args.seed} from index {args.start}; "
        f"knobs: {knobs or 'defaults'}; work budget: {mf.WOR_WORK_BUDGET if args.budget is None else args.budget:g} "
        f"grid operations; certified = alpha*_wor - acceptance <= {CERT_TOL:g}; "
        f"whole run {wall:.0f} s\n"
    )
    print(
        "| rows | n | count | median ms | p90 | p99 | max | max cpu ms | total s | certified | mean gap | max gap "
        "| out of budget | max work over budget |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for kind, _ in sets:
        for n in ns:
            rs = [r for r in recs if r["set"] == kind and r["n"] == n]
            if not rs:
                continue
            s = summarise(rs, args.budget)
            s.update(set=kind, n=n)
            summary.append(s)
            ob = f" {s['out_of_budget']} | {s['max_work_over_budget']:.2g} |"
            print(
                f"| {kind} | {n} | {s['rows']} | {s['median_ms']:.1f} | {s['p90_ms']:.1f} | {s['p99_ms']:.1f} | "
                f"{s['max_ms']:.1f} | {s['max_cpu_ms']:.1f} | {s['total_s']:.1f} | {s['certified']} "
                f"({100 * s['certified'] / s['rows']:.0f} %) | {s['mean_gap']:.1e} | {s['max_gap']:.1e} |{ob}"
            )

    print("\n## slowest rows (wall ms)\n")
    print("| rows | n | row | ms | cpu ms | gap | Σmin(p,q) | H(p) |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, _ in sets:
        rs = sorted((r for r in recs if r["set"] == kind), key=lambda r: -r["ms"])[: args.slowest]
        for r in rs:
            print(
                f"| {kind} | {r['n']} | {r['label']} | {r['ms']:.1f} | {r['cpu_ms']:.1f} | {r['gap']:.1e} | "
                f"{r['overlap']:.2f} | {r['entropy_p']:.2f} |"
            )

    if args.per_row == "all":
        print("\n## every row\n")
        print("| rows | n | row | ms | cpu ms | certified | gap |")
        print("|---|---|---|---|---|---|---|")
        for r in recs:
            print(
                f"| {r['set']} | {r['n']} | {r['label']} | {r['ms']:.1f} | {r['cpu_ms']:.1f} | "
                f"{'yes' if r['certified'] else 'no'} | {r['gap']:.1e} |"
            )

    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(
                {
                    "args": vars(args),
                    "wall_s": wall,
                    "summary": summary,
                    "rows": recs,
                    "versions": {"mdsd_fast": getattr(mf, "__version__", "?"), "numpy": np.__version__},
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
