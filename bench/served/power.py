"""The served-log check's stated power, checked by simulation.

Run:  python bench/served/power.py [--sims 400] [--out bench/results/served]

For N = 10^4, 10^5 and 10^6 positions and alpha = 0.01, ``tv_detectable(N)`` is the TV the check
claims to detect with probability 0.9 whatever the shape of the deviation. Under the null the PIT
histogram is Multinomial(N, 1/20) whatever the logged laws, so the check can be simulated on
histograms: each alternative below is a law of the 20 PIT bins at TV exactly ``tv_detectable(N)``
from uniform, and the detection rate of ``mc_pvalue`` (9,999 replicates) over ``--sims`` draws is
reported with a Wilson interval, beside the null's false-alarm rate.

* ``worst``: the chi-square's worst shape: the deviation spread evenly, +-2d/20 on alternate bins;
* ``top``: mass moved from the upper half of [0, 1) to the lower (the top logged tokens favoured);
* ``tail``: mass moved into the last bin (the unlogged tail over-emitted).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from mdsd_fast.served.stats import BINS, mc_pvalue, tv_detectable


def shapes(d: float) -> dict[str, np.ndarray]:
    u = np.full(BINS, 1 / BINS)
    sign = np.where(np.arange(BINS) % 2, 1.0, -1.0)
    half = np.where(np.arange(BINS) < BINS // 2, 1.0, -1.0)
    tail = np.full(BINS, -d / (BINS - 1))
    tail[-1] = d
    out = {"null": u, "worst": u + sign * 2 * d / BINS, "top": u + half * 2 * d / BINS, "tail": u + tail}
    for k, v in out.items():
        assert abs(v.sum() - 1) < 1e-12 and (v >= 0).all(), k
    return out


def wilson(k: int, n: int) -> tuple[float, float]:
    z, p = 1.959964, k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "served"))
    args = ap.parse_args()
    alpha, rng, rows = 0.01, np.random.default_rng(20261207), []
    t0 = time.perf_counter()
    for n in (10_000, 100_000, 1_000_000):
        d = tv_detectable(n, alpha)
        for name, law in shapes(d).items():
            hits = sum(mc_pvalue(rng.multinomial(n, law), rng) <= alpha for _ in range(args.sims))
            tv = 0.5 * float(np.abs(law - 1 / BINS).sum())
            rows.append(
                dict(
                    positions=n,
                    shape=name,
                    tv=tv,
                    tv_detectable=d,
                    rate=hits / args.sims,
                    wilson95=wilson(hits, args.sims),
                    sims=args.sims,
                )
            )
            print(f"N={n:>9,} {name:6s} TV={tv:.5f} detected {hits}/{args.sims} = {hits / args.sims:.3f}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    out = dict(
        command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        alpha=alpha,
        seconds=time.perf_counter() - t0,
        rows=rows,
    )
    (Path(args.out) / "power.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
