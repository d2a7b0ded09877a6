"""The report's findings from mergeable per-unit summaries: time and memory against the positions.

Run:  python bench/report/findings_memory.py [--units 25,100,400] [--rows 2000]

Synthetic units of ``--rows`` positions with every per-position value the default report writes
(alpha* of iid, wor, greedy, topk at n = 1-4 and every default verifier's value), the same arrays
for every unit, so only the findings' own memory is traced (tracemalloc's peak, in a separate pass
from the timing: tracemalloc slows every allocation). The arrays the old code concatenated would
take ``8 bytes x keys x positions``; that is printed beside it.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from mdsd_fast.report import ReportConfig
from mdsd_fast.report.aggregate import _findings


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", default="25,100,400")
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    cfg = ReportConfig(schemes=("iid", "wor", "greedy", "topk"), ns=(1, 2, 3, 4))
    rng = np.random.default_rng(0)
    B = args.rows
    unit = {"rows": np.arange(B)}
    for s, n in cfg.pairs():
        unit[f"alpha/{s}/{n}"] = rng.random(B)
    for v, s, n in cfg.verifier_runs():
        unit[f"verifier/{v}/{s}/{n}/value"] = rng.random(B)
        unit[f"verifier/{v}/{s}/{n}/se"] = np.zeros(B)
        unit[f"verifier/{v}/{s}/{n}/exact"] = np.array(True)
    keys = sum(1 for k in unit if k.startswith("alpha/") or k.endswith(("/value", "/se")))
    print("| positions | seconds | µs / position | peak traced MiB | concatenated arrays MiB |")
    print("|--:|--:|--:|--:|--:|")
    for units in [int(u) for u in args.units.split(",")]:
        pos = {f"u{i}": unit for i in range(units)}
        t = time.perf_counter()
        _findings(pos, cfg)
        dt = time.perf_counter() - t
        tracemalloc.start()
        _findings(pos, cfg)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        N = units * B
        print(f"| {N:,} | {dt:.2f} | {dt / N * 1e6:.1f} | {peak / 2**20:.1f} | {8 * keys * N / 2**20:.0f} |")


if __name__ == "__main__":
    main()
