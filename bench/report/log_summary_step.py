"""The log report's summary step (records and findings from the units' shards): time per position.

Run:  python bench/report/log_summary_step.py [--units 20] [--rows 10000] [--out DIR]

Synthetic shards of ``--units`` units of ``--rows`` positions each, with every key the default
report writes: 70% complete rows (alpha* and verifier values) and 30% truncated ones (interval
ends). The shards are written once to ``--out`` (reused when present), then ``_summarise`` is timed,
best of two. Run it with an older checkout on ``PYTHONPATH`` to compare (docs/guide/threads.md).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from mdsd_fast.report import ReportConfig
from mdsd_fast.report.log_summary import _summarise
from mdsd_fast.report.logs import LogUnit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=20)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfg = ReportConfig()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-log-summary-"))
    units = [LogUnit("/synthetic", i, "0" * 64, "abcd"[i % 4], 1.0, "d1") for i in range(args.units)]
    (out / "shards").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    B = args.rows
    for u in units:
        path = out / "shards" / f"{u.shard_name}.npz"
        if path.exists():
            continue
        comp = rng.random(B) < 0.7
        arr = {"rows": np.arange(B), "complete": comp}
        for s, n in cfg.pairs():
            arr[f"alpha/{s}/{n}"] = np.where(comp, rng.random(B), np.nan)
            arr[f"interval/alpha/{s}/{n}/low"] = np.where(comp, np.nan, rng.random(B) * 0.5)
            arr[f"interval/alpha/{s}/{n}/high"] = np.where(comp, np.nan, 0.5 + rng.random(B) * 0.5)
        for v, s, n in cfg.verifier_runs():
            arr[f"verifier/{v}/{s}/{n}/value"] = np.where(comp, rng.random(B), np.nan)
            arr[f"verifier/{v}/{s}/{n}/se"] = np.zeros(B)
            arr[f"verifier/{v}/{s}/{n}/exact"] = comp.copy()
        np.savez(path, **arr, __meta__=np.array("{}"))
    times = []
    for _ in range(2):
        t = time.perf_counter()
        _summarise(units, cfg, str(out))
        times.append(time.perf_counter() - t)
    N = args.units * B
    print(
        f"_summarise over {N:,} positions ({3 * (len(cfg.pairs()) + len(cfg.verifier_runs()))} keys per unit): {min(times):.2f} s, "
        f"{min(times) / N * 1e6:.1f} us per position"
    )


if __name__ == "__main__":
    main()
