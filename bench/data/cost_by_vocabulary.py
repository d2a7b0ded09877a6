"""Cost per position at V = 262,144 (Gemma-3-270M) beside V = 49,152 (SmolLM2-135M), on real rows.

Run:  python bench/data/cost_by_vocabulary.py [--gemma-full gemma3_270m_full.npz] [--rows 24] [--json OUT]

Rows: every k-th row of each dataset (k chosen to give ``--rows`` rows, spread over drafts,
temperatures and prompts). SmolLM2: the shipped data (full rows, 1 - 1e-6 of the mass). Gemma: the
full rows written by ``mdsd-fast extract --model gemma3-270m --full --out FILE`` when given (the
same contexts as the shipped sample, every row to 1 - 1e-6), and the shipped cut sample (at most
256 tokens per distribution; what the report runs on) in any case.

Timed per row, one thread, inputs validated float64 (V wide):
- alpha* iid / wor at n = 4: ``mf.optimal_acceptance(p, q, 4, scheme, threads=1)``;
- the optimal verifiers' preparation at n = 4: ``_core.verifiers.VerifierBatch("optimal", p, q, 4, "iid", None,
  1)`` and the without-replacement route ``_core.verifiers.VerifierBatch("sweep", p, q, 4, "wor", None, 1,
  WOR_WORK_BUDGET)``;
- the report's per-position cost: ``gap_report`` with its default settings on those rows, wall time
  divided by the number of rows (one process).
Medians over the rows (and their p90). The machine is shared: treat single numbers as noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import mdsd_fast as mf
from mdsd_fast import _core
from mdsd_fast.report import ReportConfig, gap_report


def _rows(ds: mf.LMDataset, k: int) -> mf.LMDataset:
    step = max(1, len(ds) // k)
    return ds[np.arange(0, len(ds), step)[:k]]


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def bench(name: str, ds: mf.LMDataset, k: int) -> dict[str, Any]:
    sub = _rows(ds, k)
    P, Q = sub.dense(np.float64, renormalize=True)
    out: dict[str, list[float]] = {"alpha iid n=4": [], "alpha wor n=4": [], "optimal iid n=4": [], "sweep wor n=4": []}
    budget = mf.WOR_WORK_BUDGET
    for p, q in zip(P, Q, strict=True):
        p2, q2 = p[None, :], q[None, :]
        out["alpha iid n=4"].append(_timed(lambda: mf.optimal_acceptance(p, q, 4, "iid", threads=1)))
        out["alpha wor n=4"].append(_timed(lambda: mf.optimal_acceptance(p, q, 4, "wor", threads=1)))
        out["optimal iid n=4"].append(
            _timed(lambda: _core.verifiers.VerifierBatch("optimal", p2, q2, 4, "iid", None, 1))
        )
        out["sweep wor n=4"].append(
            _timed(lambda: _core.verifiers.VerifierBatch("sweep", p2, q2, 4, "wor", None, 1, budget))
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = sub.save(f"{tmp}/rows.npz", encoding="float64")
        t = time.perf_counter()
        gap_report(str(path), config=ReportConfig(threads=1), progress=False)
        per_pos = (time.perf_counter() - t) * 1e3 / len(sub)
    res: dict[str, Any] = {
        "data": name,
        "V": ds.vocab_size,
        "rows": len(sub),
        "support p50": int(np.median(np.count_nonzero((P > 0) | (Q > 0), axis=1))),
    }
    for key, ms in out.items():
        res[key] = (statistics.median(ms), float(np.percentile(ms, 90)))
    res["report per position"] = per_pos
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemma-full", help="Gemma full rows (mdsd-fast extract --model gemma3-270m --full --out FILE)")
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--json")
    args = ap.parse_args()
    sets = [("SmolLM2-135M, shipped (full rows)", mf.load_dataset())]
    if args.gemma_full:
        sets.append(("Gemma-3-270M, full rows", mf.load_dataset(args.gemma_full)))
    sets.append(("Gemma-3-270M, shipped sample (cut)", mf.load_dataset(model="gemma3-270m")))
    results = [bench(name, ds, args.rows) for name, ds in sets]
    keys = ["alpha iid n=4", "alpha wor n=4", "optimal iid n=4", "sweep wor n=4"]
    print("| data | V | rows | support p50 | " + " | ".join(f"{k} (ms)" for k in keys) + " | report / position (ms) |")
    print("|---|--:|--:|--:|" + "--:|" * len(keys) + "--:|")
    for r in results:
        cells = " | ".join(f"{r[k][0]:.1f} (p90 {r[k][1]:.1f})" for k in keys)
        print(
            f"| {r['data']} | {r['V']:,} | {r['rows']} | {r['support p50']:,} | {cells} | "
            f"{r['report per position']:.0f} |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
