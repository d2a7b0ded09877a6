"""The ratio sort (cpp/include/mdsd/core/order.hpp) of two source trees side by side in one run.

    python bench/builds/ratio_sort_two_trees.py --base /path/to/main [--base-pythonpath DIR] [--reps 5]

Part 1: ``ratio_order`` alone. bench/builds/ratio_sort_two_trees.cpp is built (g++ -O3, the extension's IEEE
flags) with both trees' order.hpp in one binary, which sorts each row with both, alternating,
--reps times, keeping each one's best CPU time, and checks that the two orders are identical. Rows:
the shipped ones (``mf.load_dataset()``, V = 49,152) and held-out ones (tests/_support/heldout.py) at
V = 49,152 and 151,936.

Part 2 (with --base-pythonpath, a directory holding the base build's mdsd_fast): the best CPU time
of ``mf.optimal_acceptance(p, q, 4, "wor")`` per row, each build in its own process, alternating,
on every --wor-every-th shipped row and 12 held-out rows.

Per-row times: p50 / p99 / max in us, and the ratio of the medians (base / this).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "_support"))

FLAGS = ["-std=c++17", "-O3", "-fno-math-errno", "-ffp-contract=off"]

WOR_SNIPPET = """
import sys, time, numpy as np, mdsd_fast as mf
d = np.load(sys.argv[1]); reps = int(sys.argv[2])
for p, q in zip(d["P"], d["Q"]):
    best = 1e300
    for _ in range(reps):
        t = time.thread_time(); a = mf.optimal_acceptance(p, q, 4, "wor"); best = min(best, time.thread_time() - t)
    print(f"{best * 1e6:.1f} {a:.17g}")
"""


def row_sets() -> list[tuple[str, np.ndarray, np.ndarray]]:
    import mdsd_fast as mf
    from heldout import heldout_rows

    P, Q = mf.load_dataset().dense(np.float64)
    H, G, _ = heldout_rows(24, seed=0)
    H2, G2, _ = heldout_rows(12, seed=1, V=151936)
    return [("shipped, V = 49,152", P, Q), ("held-out, V = 49,152", H, G), ("held-out, V = 151,936", H2, G2)]


def stats(t: np.ndarray) -> str:
    return f"{np.percentile(t, 50):.0f} / {np.percentile(t, 99):.0f} / {t.max():.0f}"


def run_sorts(exe: Path, name: str, P: np.ndarray, Q: np.ndarray, reps: int, tmp: Path) -> None:
    f = tmp / "rows.bin"
    with open(f, "wb") as fh:
        np.array(P.shape, dtype=np.int64).tofile(fh)
        np.ascontiguousarray(P, dtype=np.float64).tofile(fh)
        np.ascontiguousarray(Q, dtype=np.float64).tofile(fh)
    out = subprocess.run([str(exe), str(f), str(reps)], check=True, capture_output=True, text=True).stdout
    r = np.array([[float(x) for x in line.split()] for line in out.splitlines()])
    K, tb, tt, same = r[:, 0], r[:, 1], r[:, 2], bool(r[:, 3].all())
    print(
        f"| {name} | {len(tb)} | {np.median(K):.0f} | {stats(tb)} | {stats(tt)} | "
        f"{np.median(tb) / np.median(tt):.2f}x | {np.median(tb / tt):.2f}x | {'yes' if same else '**NO**'} |"
    )


def run_wor(base_pp: str, sets: list, every: int, reps: int, tmp: Path) -> None:
    P = np.concatenate([sets[0][1][::every], sets[1][1][:12]])
    Q = np.concatenate([sets[0][2][::every], sets[1][2][:12]])
    f = tmp / "wor.npz"
    np.savez(f, P=P, Q=Q)
    paths = {"base": base_pp, "this": str(ROOT / "python")}
    best: dict[str, np.ndarray] = {}
    alphas: dict[str, list[str]] = {}
    for _ in range(2):
        for tag, pp in paths.items():
            env = dict(os.environ, PYTHONPATH=pp)
            out = subprocess.run(
                [sys.executable, "-c", WOR_SNIPPET, str(f), str(reps)],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            ).stdout
            rows = [line.split() for line in out.splitlines()]
            t = np.array([float(r[0]) for r in rows])
            best[tag] = np.minimum(best[tag], t) if tag in best else t
            alphas[tag] = [r[1] for r in rows]
    tb, tt = best["base"], best["this"]
    same = alphas["base"] == alphas["this"]
    print(
        f"| optimal_acceptance(p, q, 4, 'wor') | {len(tb)} | {stats(tb)} | {stats(tt)} | "
        f"{np.median(tb) / np.median(tt):.2f}x | {np.median(tb / tt):.2f}x | {'yes' if same else '**NO**'} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the source tree to compare against (its cpp/include)")
    ap.add_argument("--base-pythonpath", help="a directory with the base build's mdsd_fast (part 2)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--wor-every", type=int, default=12, help="part 2: every k-th shipped row")
    ap.add_argument("--wor-reps", type=int, default=3)
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    a = ap.parse_args()
    sets = row_sets()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        exe = tmp / "bench_order"
        base_hpp = Path(a.base).resolve() / "cpp" / "include" / "mdsd" / "order.hpp"
        inc = ROOT / "cpp" / "include"
        subprocess.run(
            [
                a.cxx,
                *FLAGS,
                f"-I{inc}",
                f'-DMDSD_BASE_ORDER="{base_hpp}"',
                str(HERE / "ratio_sort_two_trees.cpp"),
                "-o",
                str(exe),
            ],
            check=True,
        )
        print("ratio_order alone, best CPU time per row of", a.reps, "alternating runs, us (p50 / p99 / max):\n")
        print("| rows | count | K p50 | base | this | ratio of p50s | p50 of row ratios | same order |")
        print("|---|--:|--:|--:|--:|--:|--:|---|")
        for name, P, Q in sets:
            run_sorts(exe, name, P, Q, a.reps, tmp)
        if a.base_pythonpath:
            print("\nper row, us (p50 / p99 / max):\n")
            print("| call | rows | base | this | ratio of p50s | p50 of row ratios | same alpha* |")
            print("|---|--:|--:|--:|--:|--:|---|")
            run_wor(a.base_pythonpath, sets, a.wor_every, a.wor_reps, tmp)


if __name__ == "__main__":
    main()
