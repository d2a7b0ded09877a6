"""The tree report: expected tokens per target call on drafted trees.

For every tree shape of a tree file (default: the shipped SmolLM2 sample) and every verifier that
applies to its nodes, each drafted tree is valued exactly (``tree_values``: expected accepted length
given the drafted tree; tokens per call = accepted + 1) and the trees of a shape are averaged, with a
95 % Student-t interval from the between-tree spread. Beside them: the tree bound as an interval
(``drafted_bound``; verifier "bound"), the per-depth profile P(accepted >= d), and the chain formula
(1 - a^(g+1)) / (1 - a) at the root's per-position acceptance a with its error against the exact
value. docs/guide/trees_report.md describes the columns and what is proven.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._files import atomic_write
from ..inputs.args import integer
from ..inputs.pairs import pair_rows
from ..inputs.rules import check_threads
from ..limits import WOR_WORK_BUDGET
from ..verifiers.registry import verifiers
from ..verifiers.run import _acceptance_rows
from ._nodes import DETERMINISTIC, node_verifier
from ._report_findings import _ci, t_quantile
from .bound_drafted import drafted_bound
from .data import TreeDataset, load_trees
from .registered import chain_nodes
from .shapes import SHAPES, expected_tokens
from .tree import DraftTree
from .value import tree_values

__all__ = ["TREE_REPORT_VERIFIERS", "TreeReport", "tree_report", "t_quantile"]

#: Verifiers the report tries on every shape (those that do not apply to a shape's nodes are left
#: out of that shape); "optimal-lp" solves a Python LP per node and is only run when asked for.
TREE_REPORT_VERIFIERS: tuple[str, ...] = tuple(v for v in verifiers if v != "optimal-lp") + ("block", "traversal")
#: Tree-level verifiers (not per-node) and the bound: no per-position acceptance, no chain formula.
_TREE_LEVEL = ("block", "traversal")


@dataclass
class TreeReport:
    """Records (one per (shape, scheme, verifier)), per-depth profiles, findings and metadata."""

    records: list[dict[str, Any]]
    profiles: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    metadata: dict[str, Any]
    per_tree: dict[tuple[str, str], NDArray[np.float64]] = field(repr=False, default_factory=dict)
    trees: dict[str, list[DraftTree]] = field(repr=False, default_factory=dict)  #: the valued trees per shape

    COLUMNS = (
        "shape", "scheme", "verifier", "kind", "trees", "refused", "drafts", "depth", "accepted",
        "tokens_per_call", "ci_low", "ci_high", "bound_low", "bound_high", "exact_trees",
        "root_alpha", "root_uncut_low", "root_uncut_high", "chain_formula", "chain_error", "chain_error_ci_low", "chain_error_ci_high", "note",
    )  # fmt: skip
    PROFILE_COLUMNS = ("shape", "scheme", "verifier", "depth", "p_accepted_ge", "ci_low", "ci_high", "trees")

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """trees.csv: one row per (shape, scheme, verifier); returns the text (and writes ``path``)."""
        return _write_csv(self.records, self.COLUMNS, path)

    def profile_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """trees_profile.csv: P(accepted >= d) per (shape, verifier, depth d)."""
        return _write_csv(self.profiles, self.PROFILE_COLUMNS, path)

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """Records, profiles, findings and metadata (NaN as null)."""
        d = {"metadata": self.metadata, "records": self.records, "profiles": self.profiles, "findings": self.findings}
        text = json.dumps(_nan_to_none(d), indent=1)
        if path is not None:
            atomic_write(path, text + "\n")
        return text

    def markdown(self) -> str:
        """The terminal table (see :mod:`._report_table`)."""
        from ._report_table import markdown

        return markdown(self.records, self.profiles)

    def findings_markdown(self) -> str:
        """The findings as bullet lines wrapped at 100 columns."""
        from ._report_findings import findings_markdown

        return findings_markdown(self.findings)

    def plot(self, out_dir: str | os.PathLike[str]) -> list[str]:
        """PNG plots (matplotlib, the ``plot`` extra): tokens per call per shape, the per-depth profiles."""
        from ._report_table import plots

        return plots(self, Path(out_dir))


def _nan_to_none(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _nan_to_none(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_nan_to_none(v) for v in o]
    return o


def _write_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str], path: str | os.PathLike[str] | None) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if isinstance(r[k], float) and math.isnan(r[k]) else r[k]) for k in columns})
    if path is not None:
        atomic_write(path, buf.getvalue())
    return buf.getvalue()


def _names(
    what: str, given: Sequence[str] | None, available: Sequence[str], option: str
) -> list[str]:  # fmt: skip
    if given is None:
        return list(available)
    if isinstance(given, str) or not all(isinstance(g, str) for g in given) or not given:
        raise ValueError(f"{option}: expected a non-empty list of {what} names, got {given!r}")
    bad = [g for g in given if g not in available]
    if bad:
        raise ValueError(f"{option}: unknown {what} {', '.join(map(repr, bad))}; choose from {', '.join(available)}")
    return list(dict.fromkeys(given))


def _applies(name: str, trees: Sequence[DraftTree]) -> str | None:
    """None if ``name`` can verify every node of every tree, else why not (one line)."""
    try:
        for t in trees:
            if name == "block":
                chain_nodes(t)
                continue
            for i in range(t.N):
                n = int(t.draw_ptr[i + 1] - t.draw_ptr[i])
                if n and (name == "traversal" and t.scheme[i] == "spechub"):
                    return f"node {i} has scheme 'spechub'"
                if n and name != "traversal" and t.scheme[i] != DETERMINISTIC:
                    node_verifier(name, t.scheme[i], n, i)
    except ValueError as exc:
        return str(exc)
    return None


def _values(
    name: str, trees: list[DraftTree], threads: int | None, work_budget: float | None
) -> tuple[list[Any], list[str]]:  # fmt: skip
    """Per-tree TreeValues (None where the verifier refuses the tree) and the refusals' messages."""
    opts: dict[str, Any] = {"threads": threads, "work_budget": work_budget}
    try:
        return list(tree_values(trees, name, **opts)), []
    except ValueError:
        pass
    out: list[Any] = []
    why: list[str] = []
    for t in trees:  # one refusal must not hide the trees the verifier can value
        try:
            out.append(tree_values([t], name, **opts)[0])
        except ValueError as exc:
            out.append(None)
            why.append(str(exc))
    return out, why


def _root_alpha(name: str, t: DraftTree, work_budget: float | None, threads: int | None) -> float:
    """The verifier's exact per-position acceptance at the root row (its draft count and scheme)."""
    n = int(t.draw_ptr[1] - t.draw_ptr[0])
    if t.scheme[0] == DETERMINISTIC:
        return float(t.p[0, t.draft_tokens(0)].sum())
    # the gap report's route (the plans' bits for rrs and kseq): the two reports agree to the bit
    p2, q2, _, _ = pair_rows(t.p[0], t.q[0], threads=check_threads(threads))
    a = _acceptance_rows(name, p2, q2, n, exact=True, scheme=t.scheme[0], work_budget=work_budget, threads=threads)
    return float(a[0])


def _root_uncut(
    ts: TreeDataset, idx: list[int], trees: list[DraftTree], name: str | None, threads: int | None
) -> tuple[float, float, str]:
    """Mean interval of the root acceptance of ``name`` (None: alpha*) on the uncut root rows."""
    from ._cut import root_intervals

    roots = {(int(t.draw_ptr[1] - t.draw_ptr[0]), t.scheme[0]) for t in trees}
    if len(roots) != 1:
        return math.nan, math.nan, "roots of different n or scheme: no root interval"
    ((n, sch),) = roots
    return root_intervals(ts, idx, n, sch, name, threads=threads)


def _record(shape: str, scheme: str, name: str, kind: str, drafts: str, depth: int) -> dict[str, Any]:
    nan = math.nan
    rec: dict[str, Any] = dict.fromkeys(TreeReport.COLUMNS, nan)
    rec.update(shape=shape, scheme=scheme, verifier=name, kind=kind, drafts=drafts, depth=depth, refused=0, note="")
    return rec


def tree_report(
    dataset: TreeDataset | str | os.PathLike[str] | None = None,
    *,
    verifiers: Sequence[str] | None = None,
    shapes: Sequence[str] | None = None,
    drafts: Sequence[str] | None = None,
    limit: int | None = None,
    threads: int | None = None,
    work_budget: float | None = None,
    model: str | None = None,
) -> TreeReport:
    """Exact tokens per target call on every tree of a tree file, per (shape, scheme, verifier).

    ``dataset``: a :class:`TreeDataset`, a path, or None (the shipped sample of ``model``:
    "smollm2-135m", the default, or "gemma3-270m"). ``verifiers``,
    ``shapes``, ``drafts``: names to keep (default: all; verifiers default to
    :data:`TREE_REPORT_VERIFIERS`). ``limit``: at most this many trees per shape, in file order.
    ``threads``: C++ threads of every kernel and validation pass, the trees' own included (results
    do not depend on it). ``work_budget``: of the wor optimal
    verifiers, as in ``acceptance``, but by default ``WOR_WORK_BUDGET`` for "optimal" too (a bounded
    time per node, as the gap report's sweep column). A verifier that refuses a tree (its certificate fails, e.g.
    "optimal" on a wor node over its work budget) leaves its row without a value (``refused`` > 0).
    """
    t0 = time.perf_counter()
    work_budget = WOR_WORK_BUDGET if work_budget is None else work_budget
    if dataset is not None and model is not None:
        raise ValueError("model: give a dataset or a model's shipped sample, not both")
    ts = dataset if isinstance(dataset, TreeDataset) else load_trees(dataset, model=model)
    names = _names("verifier", verifiers, TREE_REPORT_VERIFIERS + ("optimal-lp",), "verifiers")
    if verifiers is None:
        names = list(TREE_REPORT_VERIFIERS)
    shape_names = _names("shape", shapes, list(dict.fromkeys(m["shape"] for m in ts.meta)), "shapes")
    draft_names = _names("draft", drafts, list(dict.fromkeys(m["draft"] for m in ts.meta)), "drafts")
    if limit is not None:
        try:
            limit = integer("limit", limit, 1)
        except (TypeError, ValueError):
            raise ValueError(f"limit: expected a positive integer (trees per shape), got {limit!r}") from None
    check_threads(threads)  # named here, not as a refusal of every tree
    records: list[dict[str, Any]] = []
    profiles: list[dict[str, Any]] = []
    per_tree: dict[tuple[str, str], NDArray[np.float64]] = {}
    kept: dict[str, list[DraftTree]] = {}
    picked: dict[str, list[int]] = {}
    for shape in shape_names:
        idx = [m["tree"] for m in ts.meta if m["shape"] == shape and m["draft"] in draft_names][:limit]
        if idx:
            picked[shape], kept[shape] = idx, [ts.compact_tree(t, threads=threads)[0] for t in idx]
    if not kept:
        raise ValueError(f"shapes, drafts: no tree of the data is of shape {shape_names} and draft {draft_names}")
    serve = {s: [n for n in names if _applies(n, trees) is None] for s, trees in kept.items()}
    unused = [n for n in names if not any(n in v for v in serve.values())]
    if verifiers is not None and unused:  # checked before any value is computed
        raise ValueError(f"verifiers: {', '.join(map(repr, unused))} serve no node of the selected shapes")
    for shape, trees in kept.items():
        idx = picked[shape]
        scheme = "+".join(dict.fromkeys(s for t in trees for s in t.scheme if s))
        depth = max(int(t.depth.max()) for t in trees)
        dr = ",".join(dict.fromkeys(ts.meta[t]["draft"] for t in idx))
        for name in serve[shape]:
            rec = _record(shape, scheme, name, "tree" if name in _TREE_LEVEL else "verifier", dr, depth)
            vals, why = _values(name, trees, threads, work_budget)
            rec["trees"], rec["refused"] = len(trees), len(why)
            if why:
                rec["note"] = f"refused on {len(why)} of {len(trees)} trees: {why[0]}"
                records.append(rec)
                continue
            tpc = np.array([v.tokens_per_call for v in vals])
            per_tree[(shape, name)] = tpc
            rec["tokens_per_call"], rec["ci_low"], rec["ci_high"] = _ci(tpc)
            rec["accepted"] = rec["tokens_per_call"] - 1.0
            try:  # the root's exact alpha: a certificate can refuse it like a tree (then no chain formula)
                alpha = (
                    np.array([_root_alpha(name, t, work_budget, threads) for t in trees])
                    if name not in _TREE_LEVEL
                    else None
                )
            except ValueError as exc:
                alpha, rec["note"] = None, f"no chain formula: {exc}"
            if name not in _TREE_LEVEL:  # the root acceptance of the uncut rows, where the cut allows it
                rec["root_uncut_low"], rec["root_uncut_high"], why_not = _root_uncut(ts, idx, trees, name, threads)
                rec["note"] = rec["note"] or why_not
            if alpha is not None:
                per_tree[(shape, name + ":root_alpha")] = alpha
                formula = np.array([expected_tokens(a, int(t.depth.max())) for a, t in zip(alpha, trees, strict=True)])
                err = formula - tpc
                rec["root_alpha"] = float(alpha.mean())
                rec["chain_formula"] = float(formula.mean())
                rec["chain_error"], rec["chain_error_ci_low"], rec["chain_error_ci_high"] = _ci(err)
            records.append(rec)
            prof = np.zeros((len(vals), depth))
            for k, v in enumerate(vals):
                prof[k, : v.profile.size] = v.profile
            for d in range(depth):
                m, lo, hi = _ci(prof[:, d])
                profiles.append(dict(shape=shape, scheme=scheme, verifier=name, depth=d + 1, p_accepted_ge=m,
                                     ci_low=lo, ci_high=hi, trees=len(vals)))  # fmt: skip
        records.append(_bound_record(shape, scheme, dr, depth, trees, SHAPES.get(shape), threads))
        records[-1]["root_uncut_low"], records[-1]["root_uncut_high"], _ = _root_uncut(ts, idx, trees, None, threads)
        if np.isfinite(records[-1]["bound_low"]):
            per_tree[(shape, "bound")] = np.array(records[-1].pop("_per_tree"))
        records[-1].pop("_per_tree", None)
    from ._report_findings import findings

    meta = {
        "trees": int(sum(r["trees"] for r in records if r["verifier"] == "bound")),
        "shapes": shape_names, "drafts": draft_names, "verifiers": names, "limit": limit,
        "vocab_size": ts.vocab_size, "data": ts.info.get("source", ""), "interval": "Student t, 95 %, over trees",
        "seconds": round(time.perf_counter() - t0, 2),
    }  # fmt: skip
    rep = TreeReport(records, profiles, [], meta, per_tree, kept)
    rep.findings = findings(rep)
    return rep


def _bound_record(
    shape: str, scheme: str, drafts: str, depth: int, trees: list[DraftTree], law: Any, threads: int | None
) -> dict[str, Any]:  # fmt: skip
    """The "bound" row: the tree bound of the drafting law at each root context lies in
    [low + 1, high + 1] tokens per call; ci_low / ci_high are the t-interval ends of the two means."""
    rec = _record(shape, scheme, "bound", "bound", drafts, depth)
    rec["trees"] = len(trees)
    if law is None or law.kind not in ("chain", "branch", "kseq", "static", "dynamic"):
        rec["note"] = f"shape {shape!r}: drafting law unknown (not in mdsd_fast.trees.shapes.SHAPES), no bound"
        return rec
    kseq = law.kind == "kseq"
    iv = [drafted_bound(t, depth=max(law.depth, int(t.depth.max())), kseq=kseq, threads=threads) for t in trees]
    low = np.array([b.low + 1.0 for b in iv])
    high = np.array([b.high + 1.0 for b in iv])
    rec["bound_low"], rec["ci_low"], _ = _ci(low)
    rec["bound_high"], _, rec["ci_high"] = _ci(high)
    rec["exact_trees"] = sum(b.exact for b in iv)
    if rec["exact_trees"] == len(iv):
        rec["tokens_per_call"], rec["accepted"] = rec["bound_low"], rec["bound_low"] - 1.0
    else:
        rec["note"] = "interval: bound_low..bound_high (means over trees); tokens_per_call only where exact"
    rec["_per_tree"] = high.tolist()
    return rec
