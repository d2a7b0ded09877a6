"""The roofline yardstick: every alpha* kernel against the time to stream its input once.

Run:  python bench/builds/roofline.py [--repeats 15] [--json bench/results/builds/roofline_single_row.json]
      [--previous OLD.json[:RUN]]  (an earlier run's JSON, or one named run of a file of several:
                     its kernel time and ratios side by side)
      [--clock cpu] [--stat min]  (steadier on a machine shared with other jobs, see side_by_side)
      [--batch 256]  (also: iid n = 4 on B rows, one thread against two: kernel, public API and the
                     same bytes copied by one and two threads, the batch's floor)

A ratio to numpy.argsort depends on the machine (a radix sort is memory-bound, argsort is not);
the physical floor does not: a kernel that reads p and q must at least stream 2 * 8 * V bytes.
For each V and kernel this times, side by side in one loop (medians), on one thread:

* the kernel (the C++ dual through ``_core.bound.dual_batch`` on one validated row, no Python checks),
* the floor: ``np.copyto`` of p and q into preallocated buffers (the same bytes read once),
* ``numpy.argsort`` of V float64 values,
* for iid kernels, also the full-sort route the selection replaced (``_core._testing.dual_batch_sorted``,
  the same alpha* and certificate bit for bit),

and prints kernel / floor and kernel / argsort with the machine's cache sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for _support
from _support.rows import llm_like  # noqa: E402
from _support.timing import machine_info, side_by_side  # noqa: E402

from mdsd_fast import _core  # noqa: E402
from mdsd_fast.inputs.pairs import as_pair  # noqa: E402

KERNELS = [("iid", 2), ("iid", 4), ("iid", 8), ("wor", 2), ("wor", 4), ("wor", 8), ("greedy", 4), ("topk", 4)]


def caches() -> str:
    out = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in sorted(os.listdir(base)):
            if not d.startswith("index"):
                continue
            with open(f"{base}/{d}/level") as f:
                level = f.read().strip()
            with open(f"{base}/{d}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{d}/size") as f:
                size = f.read().strip()
            out.append(f"L{level} {kind.lower()} {size}")
    except OSError:
        return "unknown"
    return ", ".join(out)


def copy_rows(p2: np.ndarray, q2: np.ndarray, bp: np.ndarray, bq: np.ndarray, threads: int) -> None:
    """The batch's floor: its p and q copied once, the rows split into `threads` contiguous blocks,
    one Python thread each (np.copyto releases the GIL)."""
    import threading

    cuts = np.linspace(0, p2.shape[0], threads + 1).astype(int)

    def part(a: int, b: int) -> None:
        np.copyto(bp[a:b], p2[a:b])
        np.copyto(bq[a:b], q2[a:b])

    if threads == 1:
        part(0, p2.shape[0])
        return
    pool = [threading.Thread(target=part, args=(int(cuts[t]), int(cuts[t + 1]))) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()


def batch_scaling(sizes: list[int], B: int, stat: Callable[[list[float]], float]) -> list[dict[str, object]]:
    """iid n = 4 on a (B, V) batch, one thread against two (wall clock, 3 alternate runs): the C++
    kernel alone (``_core.bound.dual_batch`` on validated rows), the public API (validation included; on
    float64 and on float32 rows, the width a log or an engine keeps them in) and
    the floor (the same bytes copied by one and by two threads, ``copy_rows``), so the kernel's
    speed-up reads against what the memory allows."""
    import mdsd_fast as mf

    out: list[dict[str, object]] = []
    print("\n| batch | route | 1 thread s | 2 threads s | speed-up |")
    print("|---|---|---|---|---|")
    for V in sizes:
        rng = np.random.default_rng(1)
        P = np.empty((B, V))
        Q = np.empty((B, V))
        for b in range(B):
            P[b], Q[b] = llm_like(rng, V)
        p2, q2, _ = as_pair(P, Q)
        P32, Q32 = P.astype(np.float32), Q.astype(np.float32)
        bp, bq = np.empty_like(p2), np.empty_like(q2)
        for route, call in (
            ("kernel", lambda t: _core.bound.dual_batch(p2, q2, 4, "iid", "auto", False, t)),  # noqa: B023
            ("mf.optimal_acceptance", lambda t: mf.optimal_acceptance(P, Q, 4, "iid", threads=t)),  # noqa: B023
            ("mf.optimal_acceptance, float32", lambda t: mf.optimal_acceptance(P32, Q32, 4, "iid", threads=t)),  # noqa: B023
            ("floor (copy of p, q)", lambda t: copy_rows(p2, q2, bp, bq, t)),  # noqa: B023
        ):
            t1, t2 = side_by_side(lambda c=call: c(1), lambda c=call: c(2), 3, time.perf_counter, stat)
            print(f"| {B} x {V:,} | {route} | {t1:.3f} | {t2:.3f} | {t1 / t2:.2f}x |", flush=True)
            out.append(dict(V=V, B=B, route=route, one_thread_s=t1, two_threads_s=t2, speedup=t1 / t2))
    return out


def load_previous(spec: str) -> dict[tuple[int, str, int], dict[str, float]]:
    """The kernel rows of an earlier run: FILE (one run's JSON, as --json writes it) or FILE:RUN
    (a file of several named runs)."""
    path, _, run = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
    with open(path) as f:
        data = json.load(f)
    if "rows" not in data:
        runs = sorted(k for k, v in data.items() if isinstance(v, dict) and "rows" in v)
        if run not in runs:
            raise SystemExit(f"--previous: {path} holds several runs; name one as {path}:RUN, RUN in {runs}")
        data = data[run]
    return {(r["V"], r["scheme"], r["n"]): r for r in data["rows"] if "scheme" in r}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 49_152, 151_936])
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--previous",
        default=None,
        help="an earlier run's JSON (FILE, or FILE:RUN for a file of named runs), printed beside this one",
    )
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="cpu: this thread's CPU time")
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    ap.add_argument("--batch", type=int, default=0, help="B > 0: also time a (B, V) iid batch on 1 and 2 threads")
    args = ap.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    stat = min if args.stat == "min" else statistics.median

    def timed(f: Callable[[], object], g: Callable[[], object]) -> tuple[float, float]:
        return side_by_side(f, g, args.repeats, clock, stat)

    prev = load_previous(args.previous) if args.previous else {}
    info = machine_info()
    info["caches"] = caches()
    info["timing"] = f"{args.clock} clock, {args.stat} of {args.repeats}"
    print(f"machine: {info}")
    rng = np.random.default_rng(0)
    rows = []
    head = "| V | kernel | n | kernel µs | floor µs | argsort µs | / floor | / argsort | sorted route µs |"
    if prev:
        head += " previous µs | previous / floor | previous / argsort |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for V in args.sizes:
        p, q = llm_like(rng, V)
        p2, q2, _ = as_pair(p, q)
        bp, bq = np.empty_like(p2), np.empty_like(q2)

        def floor() -> None:
            np.copyto(bp, p2)
            np.copyto(bq, q2)

        _, t_floor = timed(lambda: None, floor)
        _, t_sort = timed(lambda: None, lambda: np.argsort(p2[0]))
        for scheme, n in KERNELS:

            def kernel(s: str = scheme, k: int = n) -> None:
                _core.bound.dual_batch(p2, q2, k, s, "auto", False, 1)

            t_k, t_f = timed(kernel, floor)
            t_k2, t_s = timed(kernel, lambda: np.argsort(p2[0]))
            tk = min(t_k, t_k2)
            row = dict(V=V, scheme=scheme, n=n, kernel_s=tk, floor_s=t_f, argsort_s=t_s)
            sorted_col = "—"
            if scheme == "iid":

                def sorted_route(k: int = n) -> None:
                    _core._testing.dual_batch_sorted(p2, q2, k, "iid", "auto", False, 1)

                row["sorted_s"], _ = timed(sorted_route, kernel)
                sorted_col = f"{row['sorted_s'] * 1e6:,.0f}"
            rows.append(row)
            line = (
                f"| {V:,} | {scheme} | {n} | {tk * 1e6:,.0f} | {t_f * 1e6:.1f} | {t_s * 1e6:,.0f} | "
                f"{tk / t_f:.1f} | {tk / t_s:.2f} | {sorted_col} |"
            )
            if prev:
                o = prev.get((V, scheme, n))
                line += (
                    " — | — | — |"
                    if o is None
                    else f" {o['kernel_s'] * 1e6:,.0f} | {o['kernel_s'] / o['floor_s']:.1f} | "
                    f"{o['kernel_s'] / o['argsort_s']:.2f} |"
                )
            print(line, flush=True)
        del t_floor, t_sort
    if args.batch > 0:
        batch_rows = batch_scaling(args.sizes, args.batch, stat)
        rows.extend(batch_rows)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(machine=info, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
