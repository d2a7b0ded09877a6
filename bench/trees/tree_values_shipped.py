"""Exact tree values on the shipped SmolLM2 trees: drafted trees per second per verifier, one core.

Run:  python bench/trees/tree_values_shipped.py [--json bench/results/trees/tree_values_shipped.json]

Each shape's 18 trees (docs/guide/data.md "Draft trees") are loaded as compact trees
(``TreeDataset.compact_tree``: the union of the nodes' stored supports, 129-1,353 tokens) before the
clock starts. Timed: ``tree_values(trees, verifier, threads=1)`` for the registry verifiers, the
same call for "block" / "traversal" (Python recursions), and ``drafted_bound`` (the bound interval,
two polymatroid greedy passes per drafting node). Refused trees (e.g. "optimal" over its wor work
budget) are timed too but reported as such. Each rate is the best of 3 runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mdsd_fast.trees import drafted_bound, load_trees, tree_values
from mdsd_fast.trees.report import TREE_REPORT_VERIFIERS, _applies
from mdsd_fast.trees.shapes import SHAPES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support.io import write_rows  # noqa: E402

REPEATS = 3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ts = load_trees()
    rows = []
    print("| shape | nodes (mean) | V (mean) | verifier | trees/s, one core | note |")
    print("|---|---|---|---|---|---|")
    for shape in dict.fromkeys(m["shape"] for m in ts.meta):
        trees = [ts.compact_tree(t)[0] for t in ts.select(shape=shape)]
        nodes = sum(t.N for t in trees) / len(trees)
        vocab = sum(t.V for t in trees) / len(trees)
        for name in [*[n for n in TREE_REPORT_VERIFIERS if _applies(n, trees) is None], "bound"]:
            note = ""
            best = float("inf")
            for _ in range(REPEATS):  # best of REPEATS: the machine is shared
                t0 = time.perf_counter()
                if name == "bound":
                    law = SHAPES[shape]
                    for t in trees:
                        drafted_bound(t, depth=law.depth, kseq=law.kind == "kseq")
                else:
                    try:
                        tree_values(trees, name, threads=1)
                    except ValueError:
                        note = "refused on some trees (the batch stops at the first)"
                best = min(best, time.perf_counter() - t0)
            rate = len(trees) / best
            print(f"| {shape} | {nodes:.0f} | {vocab:.0f} | {name} | {rate:.1f} | {note} |", flush=True)
            rows.append(dict(shape=shape, nodes=nodes, V=vocab, verifier=name, trees_per_s=rate, note=note))
    if args.json:
        write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
