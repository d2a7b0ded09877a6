"""Writing real draft trees in the stored format of :mod:`mdsd_fast.trees.data`: each node's sparse
support (each distribution's most probable tokens up to ``1 - mass_cut`` of its mass, at most
``kmax``, their union and the drafted children) and :class:`TreeDatasetBuilder`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..data._format import MAX_QUANT_L1, _fixed_decode, _fixed_encode, _to_planes, write_npz
from ._raw import RawTree
from .data import TREE_FIELDS, TREES_FORMAT, TREES_FORMAT_VERSION, _mass_prefix

__all__ = ["TreeDatasetBuilder", "sparse_support", "keep_drafted_positive"]


def _ranked_top(row: NDArray[np.float64], kmax: int) -> NDArray[np.int64]:
    """The ``kmax`` most probable tokens of ``row`` in rank order (value descending, then token id)."""
    k = min(int(kmax), row.size)
    top = np.argpartition(-row, k - 1)[:k] if k < row.size else np.arange(row.size)
    return top[np.lexsort((top, -row[top]))].astype(np.int64)


def sparse_support(row: NDArray[np.float64], mass_cut: float, kmax: int) -> NDArray[np.int64]:
    """The most probable tokens of ``row`` until their mass reaches ``1 - mass_cut``, at most
    ``kmax`` of them (ties broken by token id), as ascending ids."""
    top = _ranked_top(row, kmax)
    return np.sort(top[: _mass_prefix(row[top], float(row.sum()), mass_cut, kmax)]).astype(np.int64)


def keep_drafted_positive(
    k: NDArray[np.uint64], exps: NDArray[np.int64], l1: NDArray[np.float64], offs: NDArray[np.int64],
    drafted: NDArray[np.bool_],
) -> None:  # fmt: skip
    """In place: a drafted token whose q rounds to 0 in fixed point (a wor draw of q ~ 1e-9) is
    stored as 1 unit, taken from the largest entry so the stored sum stays exact; ``l1`` grows by
    the bound 2 units. A drafted token must keep q > 0, or the tree would contradict its draws."""
    for g in np.unique(np.searchsorted(offs, np.flatnonzero(drafted & (k == 0)), side="right") - 1):
        a, b = int(offs[g]), int(offs[g + 1])
        zero = np.flatnonzero(drafted[a:b] & (k[a:b] == 0))
        top = a + int(np.argmax(k[a:b]))
        k[a + zero] = 1
        k[top] -= np.uint64(zero.size)
        l1[g] += 2.0 * zero.size * 2.0 ** -float(exps[g])


@dataclass(frozen=True)
class _Node:
    """One node as the builder keeps it: p and q on the union of their ``kmax`` top tokens and the
    drafted children, with each top in rank order and each row's total, so that any smaller cut
    (:meth:`TreeDatasetBuilder.save` ``kmax=``) is the one a run with that cap would have stored."""

    support: NDArray[np.int64]
    p: NDArray[np.float64]
    q: NDArray[np.float64]
    p_rank: NDArray[np.int64]
    q_rank: NDArray[np.int64]
    p_total: float
    q_total: float
    drafted: NDArray[np.int64]

    def cut(self, mass_cut: float, kmax: int) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
        """(support, p, q) of this node under the cut (mass_cut, kmax <= the builder's)."""
        keep = [self.drafted]
        for rank, row, total in ((self.p_rank, self.p, self.p_total), (self.q_rank, self.q, self.q_total)):
            vals = row[np.searchsorted(self.support, rank)]
            keep.append(rank[: _mass_prefix(vals, total, mass_cut, kmax)])
        s = np.unique(np.concatenate(keep)).astype(np.int64)
        at = np.searchsorted(self.support, s)
        return s, self.p[at], self.q[at]


class _Cut(NamedTuple):
    support: NDArray[np.int64]
    p: NDArray[np.float64]
    q: NDArray[np.float64]


class TreeDatasetBuilder:
    """Accumulates trees and writes the sparse file. Only each node's ``kmax`` top tokens of p and q
    are kept in memory (a dense tree at V = 262,144 is ~2 MB a node)."""

    def __init__(self, vocab_size: int, *, mass_cut: float, kmax: int, info: Mapping[str, Any] | None = None) -> None:
        if not 0.0 <= mass_cut < 1.0:
            raise ValueError(f"mass_cut must be in [0, 1), got {mass_cut}")
        if kmax < 1:
            raise ValueError(f"kmax must be >= 1, got {kmax}")
        self.vocab_size, self.mass_cut, self.kmax = int(vocab_size), float(mass_cut), int(kmax)
        self.info = dict(info or {}, mass_cut=self.mass_cut, kmax=self.kmax)
        self._trees: list[tuple[RawTree, list[_Node], dict[str, Any], tuple[int, ...]]] = []

    def __len__(self) -> int:
        return len(self._trees)

    def add(self, tree: RawTree, meta: Mapping[str, Any], context: Sequence[int]) -> None:
        """Add a validated tree with its metadata (TREE_FIELDS) and the root's context token ids."""
        missing = [f for f in TREE_FIELDS if f not in meta]
        if missing:
            raise ValueError(f"meta is missing {missing}")
        if tree.p.shape[1] != self.vocab_size:
            raise ValueError(f"tree has V = {tree.p.shape[1]}, the builder {self.vocab_size}")
        nodes = []
        for i in range(tree.parent.size):
            drafted = np.unique(tree.token[tree.draws(i)]).astype(np.int64)
            pr, qr = _ranked_top(tree.p[i], self.kmax), _ranked_top(tree.q[i], self.kmax)
            s = np.unique(np.concatenate([pr, qr, drafted])).astype(np.int64)
            nodes.append(_Node(s, tree.p[i, s], tree.q[i, s], pr, qr, float(tree.p[i].sum()),
                               float(tree.q[i].sum()), drafted))  # fmt: skip
        shell = replace(tree, p=np.zeros((tree.parent.size, 0)), q=np.zeros((tree.parent.size, 0)))
        self._trees.append((shell, nodes, dict(meta), tuple(int(t) for t in context)))

    def save(self, path: str | os.PathLike[str], *, kmax: int | None = None) -> Path:
        """Write the trees (LZMA-compressed .npy members, readable by ``numpy.load``). ``kmax``: a
        smaller cap than the builder's, giving the file a run with that cap writes (default: the builder's)."""
        kmax = self.kmax if kmax is None else int(kmax)
        if not 1 <= kmax <= self.kmax:
            raise ValueError(f"kmax: expected 1..{self.kmax} (the builder's cap), got {kmax}")
        info = dict(self.info, kmax=kmax)
        cut = [[_Cut(*nd.cut(self.mass_cut, kmax)) for nd in nodes] for _, nodes, _, _ in self._trees]
        names: dict[str, list[str]] = {"prompt_id": [], "draft": [], "shape": [], "scheme": []}

        def index(kind: str, v: str) -> int:
            lst = names[kind]
            if v not in lst:
                lst.append(v)
            return lst.index(v)

        domains: dict[str, str] = {}
        cols: dict[str, list[Any]] = {k: [] for k in ("prompt", "draft", "shape", "temperature", "position")}
        sizes, parent, token, scheme, ndraw, draw_child, ctx_len, ctx_ids = [], [], [], [], [], [], [], []
        lens, ids, pv, qv = [], [], [], []
        for (tree, _, meta, context), nodes in zip(self._trees, cut, strict=True):
            cols["prompt"].append(index("prompt_id", str(meta["prompt_id"])))
            domains[str(meta["prompt_id"])] = str(meta["domain"])
            cols["draft"].append(index("draft", str(meta["draft"])))
            cols["shape"].append(index("shape", str(meta["shape"])))
            cols["temperature"].append(float(meta["temperature"]))
            cols["position"].append(int(meta["position"]))
            sizes.append(tree.parent.size)
            parent.append(tree.parent)
            token.append(tree.token)
            scheme.append([index("scheme", s) for s in tree.scheme])
            ndraw.append(np.diff(tree.draw_ptr))
            draw_child.append(tree.draw_child)
            ctx_len.append(len(context))
            ctx_ids.append(np.asarray(context, dtype=np.int64))
            for nd in nodes:
                lens.append(nd.support.size)
                ids.append(nd.support)
                pv.append(nd.p)
                qv.append(nd.q)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        gaps = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        gaps[1:] = gaps[1:] - gaps[:-1]
        gaps[offs[:-1][np.asarray(lens) > 0]] = np.concatenate([s[:1] for s in ids]) if ids else gaps[:0]
        arrays: dict[str, Any] = {
            "format": np.array(TREES_FORMAT),
            "format_version": np.array(TREES_FORMAT_VERSION, dtype=np.int64),
            "vocab_size": np.array(self.vocab_size, dtype=np.int64),
            "info": np.array(json.dumps(info, sort_keys=True)),
            "tree_size": np.asarray(sizes, np.int32),
            "tree_prompt": np.asarray(cols["prompt"], np.int32),
            "tree_draft": np.asarray(cols["draft"], np.int16),
            "tree_shape": np.asarray(cols["shape"], np.int16),
            "tree_temperature": np.asarray(cols["temperature"], np.float64),
            "tree_position": np.asarray(cols["position"], np.int32),
            "ctx_lengths": np.asarray(ctx_len, np.int32),
            "ctx_ids": np.concatenate(ctx_ids).astype(np.int32),
            "prompt_ids": np.array(names["prompt_id"]),
            "prompt_domains": np.array([domains[p] for p in names["prompt_id"]]),
            "draft_names": np.array(names["draft"]),
            "shape_names": np.array(names["shape"]),
            "scheme_names": np.array(names["scheme"]),
            "parent": np.concatenate(parent).astype(np.int16),
            "token": np.concatenate(token).astype(np.int32),
            "scheme": np.concatenate(scheme).astype(np.int8),
            "draw_count": np.concatenate(ndraw).astype(np.int16),
            "draw_child": np.concatenate(draw_child).astype(np.int16),
            "node_lengths": np.asarray(lens, np.int32),
            # the first id of a node is its own gap: uint32 once V > 65,536 (Gemma's 262,144)
            "token_gaps": gaps.astype(np.uint16 if self.vocab_size <= 1 << 16 else np.uint32),
        }
        drafted = np.concatenate([np.isin(nd.support, tree.token[tree.draws(i)])
                                  for (tree, _, _, _), nodes in zip(self._trees, cut, strict=True)
                                  for i, nd in enumerate(nodes)])  # fmt: skip
        for key, vals in (("p", pv), ("q", qv)):
            v = np.concatenate(vals)
            exps, k, l1 = _fixed_encode(v, offs, MAX_QUANT_L1)
            if key == "q":
                keep_drafted_positive(k, exps, l1, offs, drafted)
            arrays[f"{key}_exp"] = exps.astype(np.int8)
            arrays[f"{key}_planes"] = _to_planes(k)
            arrays[f"{key}_trunc"] = np.maximum(1.0 - np.add.reduceat(v, offs[:-1]), 0.0)
            arrays[f"{key}_quant"] = l1
        self._settle_ranked(arrays, offs, cut)
        return write_npz(path, arrays)

    def _settle_ranked(self, arrays: dict[str, Any], offs: NDArray[np.int64], cut: list[list[_Cut]]) -> None:
        """A "topk" node whose drafted set is not the top of its *stored* q (near-ties that the
        fixed-point rows order differently from the model's precision) is written as "static": the
        same deterministic-set rule, without the claim that the set is q's top (docs/guide/data.md)."""
        q = _fixed_decode(arrays["q_planes"], arrays["q_exp"].astype(np.int64), offs)
        names = [str(x) for x in arrays["scheme_names"].tolist()]
        scheme = arrays["scheme"].astype(np.int64)
        if "topk" not in names:
            return
        topk, g, moved = names.index("topk"), 0, 0
        for (tree, _, _, _), nodes in zip(self._trees, cut, strict=True):
            for i, nd in enumerate(nodes):
                if scheme[g] == topk:
                    a, b = int(offs[g]), int(offs[g + 1])
                    order = np.lexsort((nd.support, -q[a:b]))  # value desc, then the lower id
                    drafted = tree.token[tree.draws(i)]
                    if not np.array_equal(np.sort(nd.support[order[: drafted.size]]), np.sort(drafted)):
                        if "static" not in names:
                            names.append("static")
                        scheme[g], moved = names.index("static"), moved + 1
                g += 1
        if moved:
            arrays["scheme"] = scheme.astype(np.int8)
            arrays["scheme_names"] = np.array(names)
            info = json.loads(str(arrays["info"]))
            info["topk_nodes_written_static"] = moved
            arrays["info"] = np.array(json.dumps(info, sort_keys=True))
