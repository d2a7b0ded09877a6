"""False alarms of the served-log check on lossless logs, and the bug logs it flags.

Run:  python bench/served/false_alarm.py [--logs 400] [--workers 2] [--out bench/results/served]

Lossless: ``--logs`` served logs (half SmolLM2-135M, half Gemma-3-270M; half vLLM's rejection
sampler, half SGLang's tree rule, both through the package's engine kernels), each 50 responses of
64 tokens (3,200 positions), seeds 0.. . Each is checked at its default settings (alpha = 0.01,
9,999 Monte Carlo replicates); the p-values are written out, with the share at or below 0.01 and
0.05 and a binomial interval for each. Bugs: every reproduced bug on both models at 3,200, 12,800
and 128,000 positions, checked the same way (p-value, verdict, the rank-1 z of the localisation).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from mdsd_fast.served import ENGINES, LOSSLESS, check_served, generate_served, served_rows

ROWS: dict[str, object] = {}


def _rows(model: str) -> object:
    if model not in ROWS:
        ROWS[model] = served_rows(model)
    return ROWS[model]


def one(job: tuple[str, str, int, int, str]) -> dict[str, object]:
    model, engine, responses, seed, tmp = job
    path = Path(tmp) / f"{model}-{engine}-{responses}-{seed}.jsonl"
    t0 = time.perf_counter()
    generate_served(path, engine, responses=responses, length=64, model=model, seed=seed, rows=_rows(model))
    t1 = time.perf_counter()
    res = check_served(path, seed=seed)
    path.unlink()
    top = next((r for r in res.by_rank if r.rank == "1"), None)
    return dict(
        model=model,
        engine=engine,
        seed=seed,
        positions=res.positions,
        pvalue=res.pvalue,
        lossless=res.lossless,
        tv_detectable=res.tv_detectable,
        rank1_z=top.z if top else math.nan,
        generate_s=t1 - t0,
        check_s=time.perf_counter() - t1,
    )


def _interval(k: int, n: int) -> tuple[float, float]:
    """Wilson 95% interval of a proportion."""
    z, p = 1.959964, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "served"))
    args = ap.parse_args()
    models = ("smollm2-135m", "gemma3-270m")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.workers) as ex:
        jobs = [(models[i % 2], LOSSLESS[(i // 2) % 2], 50, i, tmp) for i in range(args.logs)]
        lossless = list(ex.map(one, jobs, chunksize=4))
        bug_jobs = [
            (m, e, r, 1000 + r, tmp) for m in models for e in ENGINES if e not in LOSSLESS for r in (50, 200, 2000)
        ]
        bugs = list(ex.map(one, bug_jobs))
    n = len(lossless)
    summary = {}
    for a in (0.01, 0.05):
        k = sum(r["pvalue"] <= a for r in lossless)
        summary[str(a)] = dict(alarms=k, logs=n, rate=k / n, wilson95=_interval(k, n))
    out = dict(
        command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        seconds=time.perf_counter() - t0,
        false_alarms=summary,
        lossless=lossless,
        bugs=bugs,
    )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "false_alarm.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(summary, indent=1))
    for r in bugs:
        print(
            f"{r['model']:13s} {r['engine']:14s} {r['positions']:7d} p={r['pvalue']:.4g} flagged={not r['lossless']} "
            f"rank1 z={r['rank1_z']:+.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
