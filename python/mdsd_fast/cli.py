"""Command line: ``mdsd-fast`` (also ``python -m mdsd_fast``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Sequence

import numpy as np

from . import __version__
from .bound import optimal_acceptance, solve_lp

# The worked examples of THEORY.md §10 (p, q).
EXAMPLES: dict[str, tuple[list[float], list[float]]] = {
    "A": ([1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 6, 1 / 2]),
    "B": ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]),
    "C": ([0.6, 0.2, 0.1, 0.1], [0.3, 0.3, 0.3, 0.1]),
    "D": ([0.4, 0.3, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.2, 0.2]),
    "E": ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]),
    "F": ([0.6, 0.25, 0.1, 0.05], [0.3, 0.4, 0.2, 0.1]),
}


def _demo(args: argparse.Namespace) -> int:
    schemes = ("iid", "wor", "greedy")
    print(f"mdsd_fast {__version__}: optimal acceptance alpha* on the worked examples (THEORY.md §10)")
    print("Each value is computed by the sorted-prefix dual and checked against the HiGHS flow LP.\n")
    print("| case | n | " + " | ".join(f"alpha*_{s}" for s in schemes) + " | dual == LP |")
    print("|---|---|" + "---|" * len(schemes) + "---|")
    worst = 0.0
    for name, (p, q) in EXAMPLES.items():
        support = sum(1 for x in q if x > 0)
        for n in range(1, args.max_n + 1):
            cells = []
            for s in schemes:
                if s != "iid" and n > support:
                    cells.append("n/a")
                    continue
                a = optimal_acceptance(np.array(p), np.array(q), n, s)
                lp = solve_lp(np.array(p), np.array(q), n, s).alpha
                worst = max(worst, abs(a - lp))
                cells.append(f"{a:.6f}")
            print(f"| {name} | {n} | " + " | ".join(cells) + f" | {'yes' if worst < 1e-9 else 'NO'} |")
    # A real-vocabulary-sized example: Dirichlet-like heavy tails, V = 49,152.
    rng = np.random.default_rng(0)
    V = 49_152
    logits = rng.standard_normal(V) * 3.0
    p = np.exp(logits - logits.max())
    p /= p.sum()
    q = np.exp(logits + rng.standard_normal(V) * 1.0)
    q /= q.sum()
    print(f"\nSynthetic pair at V = {V:,} (sum min(p, q) = {np.minimum(p, q).sum():.4f}):\n")
    print("| n | alpha*_iid | alpha*_wor | alpha*_greedy | ms (iid / wor) |")
    print("|---|---|---|---|---|")
    for n in (1, 2, 4, 8):
        t0 = time.perf_counter()
        a_iid = optimal_acceptance(p, q, n, "iid")
        t1 = time.perf_counter()
        a_wor = optimal_acceptance(p, q, n, "wor")
        t2 = time.perf_counter()
        a_gr = optimal_acceptance(p, q, n, "greedy")
        print(f"| {n} | {a_iid:.6f} | {a_wor:.6f} | {a_gr:.6f} | {1e3 * (t1 - t0):.1f} / {1e3 * (t2 - t1):.1f} |")
    print(f"\nlargest |dual - LP| on the worked examples: {worst:.2e}")
    return 0 if worst < 1e-9 else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mdsd-fast", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mdsd_fast {__version__}")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="print alpha* for every scheme on built-in examples")
    demo.add_argument("--max-n", type=int, default=4, help="largest number of drafts (default 4)")
    demo.set_defaults(func=_demo)
    from .lm import add_extract_parser  # torch is imported only when `extract` runs

    add_extract_parser(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["demo", *(argv or [])])
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
