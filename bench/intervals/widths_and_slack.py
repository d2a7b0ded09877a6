"""Interval widths of ``acceptance_bounds`` on the shipped dataset truncated to its top k.

Each row of ``mf.load_dataset()`` (renormalised over its stored support) is taken as the truth,
cut to its k most probable tokens in p and in q, and bounded. Printed per (k, scheme, n): the mean
and largest width high - low; where the truth sits; and how much of the width is slack, measured
against the extreme completions the search visited (``low_slack`` = smallest alpha* found - low,
``high_slack`` = high - largest alpha* found: upper bounds on the distance to the true extremes;
the search runs on every row here, ``witnesses=True``, also where ``high`` does not need it; for
"iid" the witness is the best completion of the cutting planes of docs/design/intervals.md §3.3, so the
largest alpha* over completions lies in [high - high_slack, high]: the slack is a proof of how
close ``high`` is, per row; for "wor" the witness is also that of a local search and the bracket's
upper end the smaller of high and the cap-aware bound of docs/design/intervals.md §3.5: "bracket slack" =
that end - the witness, a proven distance to the largest alpha* where "high slack" measures the
function's own high). ``--heldout N`` takes N generated rows (tests/_support/heldout.py, a seed the
package was never tuned on) as the truths instead of the shipped ones.

    PYTHONPATH=python python bench/intervals/widths_and_slack.py [--rows 537] [--k 20 100 1000] [--heldout 256]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import mdsd_fast as mf
from mdsd_fast.intervals.bounds import _bounds
from mdsd_fast.intervals.ends import SEARCH_STEPS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support import tests_on_path  # noqa: E402
from _support.rows import top_k  # noqa: E402


def truths(a: argparse.Namespace) -> tuple[str, Iterator[tuple[np.ndarray, np.ndarray]]]:
    """The rows taken as the truth, in chunks: the shipped ones or held-out generated ones."""
    if a.heldout:
        tests_on_path()
        from heldout import heldout_rows

        def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for start in range(0, a.heldout, a.chunk):
                P, Q, _ = heldout_rows(min(a.chunk, a.heldout - start), seed=a.seed, start=start)
                yield P, Q

        return f"{a.heldout} held-out rows (tests/_support/heldout.py, seed {a.seed})", gen()
    ds = mf.load_dataset()
    if a.rows is not None:
        ds = ds[: a.rows]
    chunks = ((ch.p, ch.q) for ch in ds.iter_chunks(a.chunk, renormalize=True))
    return f"{len(ds)} shipped rows, V = {ds.shape[1]}", chunks  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="first rows of the dataset (default: all)")
    ap.add_argument("--k", type=int, nargs="+", default=[20, 100, 1000])
    ap.add_argument("--n", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--schemes", nargs="+", default=["iid", "wor"])
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--heldout", type=int, default=0, help="this many generated rows instead of the shipped ones")
    ap.add_argument("--seed", type=int, default=7, help="seed of the held-out rows")
    a = ap.parse_args()
    print(truths(a)[0])
    print(
        "| k | scheme | n | mean width | max width | truth - low | high - truth | low slack | "
        "high slack (mean / p99 / max) | bracket slack (mean / p99 / max) | s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in a.k:
        for scheme in a.schemes:
            for n in a.n:
                cols: list[list[np.ndarray]] = [[], [], [], [], [], []]
                t0 = time.perf_counter()
                for P, Q in truths(a)[1]:
                    pk, qk = top_k(P, k), top_k(Q, k)
                    lo, br, wlo, whi, _ = _bounds(pk, qk, n, scheme, SEARCH_STEPS, witnesses=True)
                    hi = _bounds(pk, qk, n, scheme, SEARCH_STEPS)[1]  # the function's own high
                    truth = mf.optimal_acceptance(P, Q, n, scheme)
                    assert np.all(lo <= truth) and np.all(truth <= br) and np.all(br <= hi), "interval misses the truth"
                    assert not np.any(whi > br), "a witness completion above the bracket's upper end"
                    for c, v in zip(cols, (lo, hi, wlo, whi, truth, br), strict=True):
                        c.append(v)
                lo, hi, wlo, whi, truth, br = (np.concatenate(c) for c in cols)
                w = hi - lo
                print(
                    f"| {k} | {scheme} | {n} | {w.mean():.4f} | {w.max():.4f} | {(truth - lo).mean():.4f} | "
                    f"{(hi - truth).mean():.4f} | {(wlo - lo).mean():.2e} / {(wlo - lo).max():.2e} | "
                    f"{(hi - whi).mean():.2e} / {np.quantile(hi - whi, 0.99):.2e} / {(hi - whi).max():.2e} | "
                    f"{(br - whi).mean():.2e} / {np.quantile(br - whi, 0.99):.2e} / {(br - whi).max():.2e} | "
                    f"{time.perf_counter() - t0:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
