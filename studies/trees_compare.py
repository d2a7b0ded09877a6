"""Exact comparison on small random tree laws: traversal verification (not per-node) against the
tree bound (best per-node verifier) and the per-node alpha*-optimal plan; block against the bound
on chains. Every number is exact (enumeration over drafting). Run:
    PYTHONPATH=python python studies/trees_compare.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "_support"))

from mdsd_fast.trees import chain_values, kseq_bound, per_node_ot_value, traversal_expected_accepted, tree_bound
from tree_enum import branching_trees, kseq_trees, to_arrays, toy_oracle  # noqa: E402

ORDER = ("parent", "token", "p", "q", "draw_ptr", "draw_child", "scheme")


def traversal(oracle, trees) -> float:
    return sum(pr * traversal_expected_accepted(*[to_arrays(r, oracle)[k] for k in ORDER]) for r, pr in trees)


def main() -> None:
    seeds = range(20)
    print(
        "| law | V | cases | traversal > bound | traversal < bound | mean traversal | mean bound | mean per-node OT |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for v, label, shape in [
        (3, "2 iid, then 1", [(2, "iid"), (1, "iid")]),
        (4, "2 iid, then 1", [(2, "iid"), (1, "iid")]),
        (3, "2 wor, then 1", [(2, "wor"), (1, "iid")]),
        (3, "2 iid, then 2 iid", [(2, "iid"), (2, "iid")]),
        (4, "3 iid (one level)", [(3, "iid")]),
    ]:
        rows = []
        for s in seeds:
            oracle = toy_oracle(v, 1000 + s)
            rows.append(
                (
                    traversal(oracle, branching_trees(oracle, shape)),
                    tree_bound(oracle, shape).value,
                    per_node_ot_value(oracle, shape),
                )
            )
        print(_row(label, v, rows))
    rows = []
    for s in seeds:
        oracle = toy_oracle(3, 1000 + s)
        rows.append((traversal(oracle, kseq_trees(oracle, 2, 2)), kseq_bound(oracle, 2, 2), float("nan")))
    print(_row("K = 2 sequences of length 2", 3, rows))
    rows = []
    for s in seeds:
        values = chain_values(toy_oracle(3, 1000 + s), 3)
        rows.append((values.block, values.sd, values.sd))
    print(_row("chain of 3 (traversal = block, bound = sd)", 3, rows))


def _row(label: str, v: int, rows: list[tuple[float, float, float]]) -> str:
    wins = sum(t > b + 1e-9 for t, b, _ in rows)
    losses = sum(t < b - 1e-9 for t, b, _ in rows)
    mean = [sum(r[i] for r in rows) / len(rows) for i in range(3)]
    return f"| {label} | {v} | {len(rows)} | {wins} | {losses} | {mean[0]:.4f} | {mean[1]:.4f} | {mean[2]:.4f} |"


if __name__ == "__main__":
    main()
