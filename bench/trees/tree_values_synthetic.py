"""Exact tree values: drafted trees per second for ``trees.tree_value``, per verifier, one core.

Run:  python bench/trees/tree_values_synthetic.py [--V 49152] [--trees 5] [--json bench/results/trees/tree_values_synthetic.json]

Synthetic LLM-like rows (Zipf-like target p at a random temperature, draft q a noisy copy of
its logits), a fresh pair per node from a prefix-seeded oracle. Shapes: "4x3" (every node drafts 4 tokens, depth 3, by the
verifier's scheme: i.i.d. duplicates merge) and "K4xL3" (SpecTr: 4 i.i.d. sequences of length 3).
The trees are drafted before the clock starts; values are computed with threads=1, one tree
at a time (``tree_value``) and as one batch (``tree_values``); "node_laws route" times the
per-node laws alone through the Python API (one C++ call per node), for comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mdsd_fast import trees

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _support
from _support.io import write_rows  # noqa: E402

# verifier -> scheme of the shape "4x3"
VERIFIERS = {
    "rrs": "iid",
    "kseq": "iid",
    "optimal": "iid",
    "rrs-wor": "wor",
    "sweep": "wor",
    "greedy": "greedy",
    "topk": "topk",
}


def oracle(V: int) -> Any:
    cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def call(prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        if prefix not in cache:
            g = np.random.default_rng(int(hashlib.sha256(repr(prefix).encode()).hexdigest()[:12], 16))
            logp = -1.1 * np.log1p(np.arange(V))[g.permutation(V)]  # Zipf-like ranks
            logp *= g.uniform(0.6, 1.6)  # a random temperature per node
            logq = logp + g.normal(0.0, 1.6, V)  # the draft model: a noisy copy
            p, q = np.exp(logp - logp.max()), np.exp(logq - logq.max())
            cache[prefix] = (p / p.sum(), q / q.sum())
        return cache[prefix]

    return call


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--V", type=int, default=49_152)
    ap.add_argument("--trees", type=int, default=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    orc = oracle(args.V)
    rows = []
    print(
        "| V | shape | verifier | nodes | trees/s, one at a time | batch, 1 thread | batch, 2 threads "
        "| node_laws route | tokens/call |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    cases = [("4x3", name, sch) for name, sch in VERIFIERS.items()]
    cases += [("K4xL3", name, "iid") for name in ("rrs", "kseq", "optimal")]
    for shape, name, sch in cases:
        gen = np.random.default_rng(1)
        if shape == "4x3":
            batch = [trees.draft_branching(orc, [4, 4, 4], sch, rng=gen) for _ in range(args.trees)]
        else:
            batch = [trees.draft_kseq(orc, 4, 3, rng=gen) for _ in range(args.trees)]
        trees.tree_value(batch[0], name, threads=1)  # warm-up
        times, tpc = [], []
        for t in batch:
            t0 = time.perf_counter()
            v = trees.tree_value(t, name, threads=1)
            times.append(time.perf_counter() - t0)
            tpc.append(v.tokens_per_call)
        rate = 1 / statistics.median(times)
        t0 = time.perf_counter()
        trees.node_laws(batch[0], name, threads=1)  # the per-node route: one law row per node via Python
        laws_rate = 1 / (time.perf_counter() - t0)
        batch_rate = {}
        for th in (1, 2):
            t0 = time.perf_counter()
            trees.tree_values(batch, name, threads=th)
            batch_rate[th] = len(batch) / (time.perf_counter() - t0)
        nodes = statistics.mean(t.N for t in batch)
        print(
            f"| {args.V:,} | {shape} | {name} | {nodes:.0f} | {rate:.1f} | {batch_rate[1]:.1f} | {batch_rate[2]:.1f} "
            f"| {laws_rate:.1f} | {statistics.mean(tpc):.3f} |",
            flush=True,
        )
        rows.append(
            dict(
                V=args.V,
                shape=shape,
                verifier=name,
                nodes=nodes,
                trees_per_s=rate,
                batch_1=batch_rate[1],
                batch_2=batch_rate[2],
                node_laws_route=laws_rate,
                tokens_per_call=statistics.mean(tpc),
            )
        )
    if args.json:
        write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
