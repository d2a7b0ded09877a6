"""The "wor" high of ``acceptance_bounds`` on rows beyond ``WOR_MAX_ROW_CELLS`` (top-1,000 logs), which
take the candidate search (docs/guide/intervals.md §3, docs/design/intervals.md §3.5) and then the box search inside
§3.2's family from its best set (``WOR_BOX_BUDGET``): run it under two builds side by side.

One run of this script measures one build (the package on PYTHONPATH) on the first ``--rows`` shipped
rows (or ``--heldout N`` generated rows, tests/_support/heldout.py, seed 7) cut to their top ``--k``, for each
n: per row low, high, the largest alpha*_wor the search visited (its witness) and the seconds, saved
to ``--out``. ``--compare A B`` prints B against A: high mean / p99 / max, high - witness, the
per-row change of high, and the seconds per row of each. Alternate the two builds in one shell run
(the machine is shared): the ratio of seconds is the claim, not either number.

    PYTHONPATH=<main>/python python bench/intervals/wor_high_beyond_limit.py --out /tmp/main.npz
    PYTHONPATH=python python bench/intervals/wor_high_beyond_limit.py --out /tmp/head.npz
    python bench/intervals/wor_high_beyond_limit.py --compare /tmp/main.npz /tmp/head.npz

``--budget N`` sets ``intervals.wor.WOR_BOX_BUDGET`` for the run (a build that has it; 0 = the
candidate search alone), to measure the budget's effect on held-out rows.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def rows(a: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    if a.heldout:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "_support"))
        from heldout import heldout_rows

        P, Q, _ = heldout_rows(a.heldout, seed=7)
        return P, Q
    import mdsd_fast as mf

    ch = next(mf.load_dataset()[: a.rows].iter_chunks(a.rows, renormalize=True))
    return ch.p, ch.q


def run(a: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
    from _support.rows import top_k

    from mdsd_fast.intervals import bounds, ends, wor

    if a.budget is not None:
        wor.WOR_BOX_BUDGET = a.budget
    P, Q = rows(a)
    p, q = top_k(P, a.k), top_k(Q, a.k)
    out: dict[str, np.ndarray] = {"budget": np.array(getattr(wor, "WOR_BOX_BUDGET", -1))}
    for n in a.n:
        t0 = time.process_time()
        lo, hi, _, whi, _ = bounds._bounds(p, q, n, "wor", ends.SEARCH_STEPS, threads=1)
        out[f"s{n}"] = np.array(time.process_time() - t0)
        out[f"lo{n}"], out[f"hi{n}"], out[f"wit{n}"] = lo, hi, whi
        searched = int(np.isfinite(whi).sum())
        print(f"n = {n}: {searched} of {len(hi)} rows through the candidate search, {out[f's{n}']:.1f} CPU-s")
        if a.family:  # the whole family's minimum on the searched rows (seconds per row at top 1,000)
            out[f"fam{n}"] = family_min(p, q, n, np.isfinite(whi))
    out["cells"] = np.array(wor.WOR_MAX_ROW_CELLS)
    np.savez(a.out, **out)


def family_min(p: np.ndarray, q: np.ndarray, n: int, rows: np.ndarray) -> np.ndarray:
    """``wor_cut_min`` over §3.2's whole family on ``rows`` (NaN elsewhere), as ``_bounds`` clips it."""
    from mdsd_fast.intervals import bounds, ends, wor
    from mdsd_fast.intervals.iid import union

    P, Q, V, _ = bounds._parts(p, q)
    pl, ql = union(P, Q, V, ends._Log)
    sub = bounds._take(pl, ql, rows)
    fam = np.full(rows.shape, np.nan)
    hi = wor.wor_high(*sub, np.zeros(sub[0].x.shape, dtype=bool), n, 0)
    fam[rows] = np.clip(hi + bounds.BOUND_SLACK, 0.0, 1.0)
    return fam


def stats(x: np.ndarray) -> str:
    return f"{x.mean():.3e} / {np.quantile(x, 0.99):.3e} / {x.max():.3e}"


def compare(a_path: str, b_path: str) -> None:
    """B against A on the rows both ran through the candidate search (the others take the kernel)."""
    A, B = np.load(a_path), np.load(b_path)
    print(
        "| n | rows searched | high, A | high, B | high - witness, A | high - witness, B "
        "| A - B (mean / max / min) | rows lower | low max diff | CPU-ms per row A / B |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(k for k in A.files if k.startswith("hi")):
        n = key[2:]
        s = np.isfinite(A["wit" + n]) & np.isfinite(B["wit" + n])
        ha, hb = A[key][s], B[key][s]
        d = ha - hb
        print(
            f"| {n} | {int(s.sum())} of {s.size} | {stats(ha)} | {stats(hb)} | {stats(ha - A['wit' + n][s])} | "
            f"{stats(hb - B['wit' + n][s])} | {d.mean():.2e} / {d.max():.2e} / {d.min():.1e} | {int((d > 1e-9).sum())} | "
            f"{np.abs(A['lo' + n] - B['lo' + n]).max():.1e} | "
            f"{1e3 * float(A['s' + n]) / s.size:.1f} / {1e3 * float(B['s' + n]) / s.size:.1f} |"
        )
    fams = [k for k in B.files if k.startswith("fam")]
    if fams:
        print("\nhigh - the whole family's minimum (B's run), mean / p99 / max; rows above it by > 1e-9:\n")
        print("| n | rows | A | B | rows above, A / B |")
        print("|---|---|---|---|---|")
    for key in sorted(fams):
        n = key[3:]
        s = np.isfinite(B[key]) & np.isfinite(A["wit" + n])
        da, db = A["hi" + n][s] - B[key][s], B["hi" + n][s] - B[key][s]
        print(
            f"| {n} | {int(s.sum())} | {stats(da)} | {stats(db)} | {int((da > 1e-9).sum())} / {int((db > 1e-9).sum())} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=64, help="shipped rows (the first ones)")
    ap.add_argument("--heldout", type=int, default=0, help="generated rows instead (tests/_support/heldout.py, seed 7)")
    ap.add_argument("--k", type=int, default=1000, help="logged tokens per side")
    ap.add_argument("--n", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--budget", type=int, help="WOR_BOX_BUDGET for this run (a build that has it)")
    ap.add_argument("--family", action="store_true", help="also the whole family's minimum (slow: seconds per row)")
    ap.add_argument("--out", help="where to save this build's numbers (.npz)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="print B against A")
    a = ap.parse_args()
    if a.compare:
        compare(*a.compare)
    else:
        run(a)


if __name__ == "__main__":
    main()
