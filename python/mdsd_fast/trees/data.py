"""Real draft trees: the stored format and the loader (NumPy only; the writer is :mod:`.builder`).

A file holds drafted trees in the contract of docs/guide/trees_verification.md §1 (parent, token, p, q,
draw_ptr, draw_child, scheme), grown from a real model by ``mdsd-fast extract-trees``
(:mod:`mdsd_fast.extract.trees`, docs/guide/data.md "Draft trees"). A 49k-token row per node is too large to
ship, so each node keeps a sparse support: for p and for q, the most probable tokens up to
``1 - mass_cut`` of the mass but at most ``kmax`` of them, their union, plus the node's drafted
child tokens (a drafted token always has its q). p and q are stored on that union in the fixed-point
encoding of :mod:`mdsd_fast.data` (L1 error <= 1e-6), and the mass left out is recorded per node
(``p_trunc``, ``q_trunc``). :meth:`TreeDataset.tree` renormalises the stored rows, so a loaded row
is the real row conditioned on the stored support: its L1 distance to the real row is at most
2 x the recorded truncation (plus the encoding error).

>>> ts = load_trees()                            # python/mdsd_fast/data/trees_smollm2.npz
>>> t = ts.tree(0)                               # a validated trees._raw.RawTree (dense p, q)
>>> ts.meta[0]["shape"], ts.meta[0]["draft"]
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import shipped_model
from ..data._format import _fixed_decode
from ..inputs.args import check_alloc, int_array, integer, nbytes
from ..inputs.rules import MAX_V
from ._raw import RawTree, check_tree
from .tree import DraftTree

__all__ = [
    "SHIPPED_TREES",
    "TREES_FORMAT",
    "TreeDataset",
    "default_trees_path",
    "load_trees",
]


TREES_FORMAT = "mdsd_fast.lmtrees"
TREES_FORMAT_VERSION = 1
DEFAULT_TREES_FILE = "trees_smollm2.npz"
#: the shipped tree sample of each model (keys as in ``data.SHIPPED_MODELS``)
SHIPPED_TREES: dict[str, str] = {"smollm2-135m": DEFAULT_TREES_FILE, "gemma3-270m": "trees_gemma3_270m.npz"}
#: per-tree metadata fields (TreeDataset.meta)
TREE_FIELDS = ("prompt_id", "domain", "temperature", "position", "draft", "shape")


def default_trees_path(model: str | None = None) -> Path:
    """Path of the shipped tree sample of ``model`` inside the package (None: SmolLM2-135M)."""
    return Path(__file__).resolve().parent.parent / "data" / SHIPPED_TREES[shipped_model(model)]


def _mass_prefix(values: NDArray[np.float64], total: float, mass_cut: float, kmax: int) -> int:
    """How many of the ranked ``values`` are kept: until ``1 - mass_cut`` of ``total``, at most kmax."""
    k = min(int(kmax), values.size)
    n = int(np.searchsorted(np.cumsum(values[:k]), (1.0 - mass_cut) * total)) + 1
    return min(n, k)


class TreeDataset:
    """Trees read from a file written by :class:`TreeDatasetBuilder` (see the module docstring)."""

    def __init__(self, z: Mapping[str, NDArray[Any]]) -> None:
        self.vocab_size = integer("vocab_size", np.asarray(z["vocab_size"]).item(), 1, MAX_V)
        self.info: dict[str, Any] = json.loads(str(z["info"]))
        _check_counts(z)
        sizes = z["tree_size"].astype(np.int64)
        self._node_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._ctx_off = np.concatenate([[0], np.cumsum(z["ctx_lengths"].astype(np.int64))])
        self._ctx_ids = int_array("ctx_ids", z["ctx_ids"])
        self._parent = int_array("parent", z["parent"])
        self._token = int_array("token", z["token"])
        self._scheme = int_array("scheme", z["scheme"])
        self._scheme_names = [str(s) for s in z["scheme_names"].tolist()]
        self._draw_off = np.concatenate([[0], np.cumsum(z["draw_count"].astype(np.int64))])
        self._draw_child = int_array("draw_child", z["draw_child"])
        lens = z["node_lengths"].astype(np.int64)
        self._sup_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        cs = np.cumsum(z["token_gaps"].astype(np.int64))
        self._support = cs - np.repeat(np.concatenate([[0], cs])[self._sup_off[:-1]], lens)
        self._p = _fixed_decode(z["p_planes"], z["p_exp"].astype(np.int64), self._sup_off).astype(np.float64)
        self._q = _fixed_decode(z["q_planes"], z["q_exp"].astype(np.int64), self._sup_off).astype(np.float64)
        self.p_truncation: NDArray[np.float64] = z["p_trunc"].astype(np.float64)
        self.q_truncation: NDArray[np.float64] = z["q_trunc"].astype(np.float64)
        self.p_quant: NDArray[np.float64] = z["p_quant"].astype(np.float64)
        self.q_quant: NDArray[np.float64] = z["q_quant"].astype(np.float64)
        prompts = z["prompt_ids"].tolist()
        dom = z["prompt_domains"].tolist()
        drafts, shapes = z["draft_names"].tolist(), z["shape_names"].tolist()
        self.meta: list[dict[str, Any]] = [
            {
                "tree": t,
                "prompt_id": str(prompts[int(z["tree_prompt"][t])]),
                "domain": str(dom[int(z["tree_prompt"][t])]),
                "temperature": float(z["tree_temperature"][t]),
                "position": int(z["tree_position"][t]),
                "draft": str(drafts[int(z["tree_draft"][t])]),
                "shape": str(shapes[int(z["tree_shape"][t])]),
                "nodes": int(sizes[t]),
            }
            for t in range(sizes.size)
        ]

    def __len__(self) -> int:
        return len(self.meta)

    def __repr__(self) -> str:
        return f"<TreeDataset: {len(self)} trees, {int(self._node_off[-1])} nodes, V = {self.vocab_size}>"

    def _nodes(self, t: int) -> range:
        if not 0 <= t < len(self):
            raise IndexError(f"tree index {t} out of range for {len(self)} trees")
        return range(int(self._node_off[t]), int(self._node_off[t + 1]))

    def context(self, t: int) -> list[int]:
        """Token ids of tree ``t``'s root context (prompt in the chat template + generated tokens)."""
        self._nodes(t)
        return [int(x) for x in self._ctx_ids[self._ctx_off[t] : self._ctx_off[t + 1]]]

    def truncation(self, t: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mass left out of each node's stored p and q rows (N,), N = nodes of tree ``t``."""
        r = self._nodes(t)
        return self.p_truncation[r.start : r.stop], self.q_truncation[r.start : r.stop]

    def sparse_rows(self, t: int) -> list[tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]]:
        """Per node of tree ``t``: (support token ids, stored p, stored q), not renormalised."""
        out = []
        for g in self._nodes(t):
            a, b = int(self._sup_off[g]), int(self._sup_off[g + 1])
            out.append((self._support[a:b], self._p[a:b], self._q[a:b]))
        return out

    def tree(self, t: int, *, threads: int | None = None) -> RawTree:
        """Tree ``t`` as validated contract arrays; dense p and q rows renormalised over the support.
        ``threads``: of the validation (None: all cores)."""
        r = self._nodes(t)
        n = len(r)
        check_alloc(
            "vocab_size", nbytes(n, self.vocab_size, copies=4), f"tree {t}'s dense ({n}, {self.vocab_size}) rows"
        )
        p = np.zeros((n, self.vocab_size))
        q = np.zeros((n, self.vocab_size))
        for i, (s, pv, qv) in enumerate(self.sparse_rows(t)):
            p[i, s] = pv / pv.sum()
            q[i, s] = qv / qv.sum()
        d0, d1 = int(self._draw_off[r.start]), int(self._draw_off[r.stop])
        return check_tree(
            self._parent[r.start : r.stop],
            self._token[r.start : r.stop],
            p,
            q,
            self._draw_off[r.start : r.stop + 1] - d0,
            self._draw_child[d0:d1],
            [self._scheme_names[int(s)] for s in self._scheme[r.start : r.stop]],
            threads=threads,
        )

    def compact_tree(self, t: int, *, threads: int | None = None) -> tuple[DraftTree, NDArray[np.int64]]:
        """Tree ``t`` as a :class:`DraftTree` over the union of its nodes' stored supports (token ids
        renumbered in increasing order, so ties keep the lowest-id rule) and that union, the real ids.
        Every value is the same as on the dense rows of :meth:`tree` (tokens outside have p = q = 0
        at every node); the rows are ~1,000 wide instead of 49,152. ``threads``: of the validation."""
        r = self._nodes(t)
        rows = self.sparse_rows(t)
        vocab = np.unique(np.concatenate([s for s, _, _ in rows]))
        p = np.zeros((len(r), vocab.size))
        q = np.zeros((len(r), vocab.size))
        for i, (s, pv, qv) in enumerate(rows):
            k = np.searchsorted(vocab, s)
            p[i, k] = pv / pv.sum()
            q[i, k] = qv / qv.sum()
        token = self._token[r.start : r.stop].copy()
        token[1:] = np.searchsorted(vocab, token[1:])
        d0, d1 = int(self._draw_off[r.start]), int(self._draw_off[r.stop])
        scheme = [self._scheme_names[int(s)] for s in self._scheme[r.start : r.stop]]
        tree = DraftTree(
            self._parent[r.start : r.stop], token, p, q, self._draw_off[r.start : r.stop + 1] - d0,
            self._draw_child[d0:d1], scheme, threads=threads,
        )  # fmt: skip
        return tree, vocab.astype(np.int64)

    def select(self, **fields: Any) -> list[int]:
        """Indices of the trees whose metadata equal every given field (e.g. shape="b2x4")."""
        bad = [k for k in fields if k not in TREE_FIELDS]
        if bad:
            raise ValueError(f"unknown field(s) {bad}; choose from {TREE_FIELDS}")
        return [m["tree"] for m in self.meta if all(m[k] == v for k, v in fields.items())]


def _check_counts(z: Mapping[str, NDArray[Any]]) -> None:
    """The file's counts agree with the arrays they index (a lying count is an error, not an
    IndexError or a tree read from another's nodes)."""
    counts = {}
    for name, lo in (("tree_size", 1), ("ctx_lengths", 0), ("draw_count", 0), ("node_lengths", 0), ("token_gaps", 0)):
        counts[name] = int_array(name, z[name], lo, MAX_V)
    total = int(counts["tree_size"].sum())
    for name, want in (
        ("parent", total), ("token", total), ("scheme", total), ("draw_count", total), ("node_lengths", total),
        ("draw_child", int(counts["draw_count"].sum())), ("token_gaps", int(counts["node_lengths"].sum())),
        ("ctx_ids", int(counts["ctx_lengths"].sum())),
    ):  # fmt: skip
        if np.shape(z[name]) != (want,):
            raise ValueError(f"{name}: expected {want} entries (from the file's counts), got shape {np.shape(z[name])}")
    trees = counts["tree_size"].size
    for name in ("ctx_lengths", "tree_prompt", "tree_temperature", "tree_position", "tree_draft", "tree_shape"):
        if np.shape(z[name]) != (trees,):
            raise ValueError(f"{name}: expected one entry per tree ({trees}), got shape {np.shape(z[name])}")
    for name, table in (("tree_prompt", "prompt_ids"), ("tree_draft", "draft_names"), ("tree_shape", "shape_names")):
        int_array(name, z[name], 0, max(np.size(z[table]) - 1, 0))
    int_array("scheme", z["scheme"], 0, max(np.size(z["scheme_names"]) - 1, 0))


def load_trees(path: str | os.PathLike[str] | None = None, *, model: str | None = None) -> TreeDataset:
    """Read a tree file (default: the shipped sample of ``model``, SmolLM2-135M unless given).
    NumPy only; no pickles."""
    if path is not None and model is not None:
        raise ValueError("model: give a path or a model's shipped sample, not both")
    path = default_trees_path(model) if path is None else Path(path)
    with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:  # our handle: closed even if np.load fails
        fmt = str(z["format"]) if "format" in z.files else ""
        if fmt != TREES_FORMAT:
            raise ValueError(f"{path}: not a {TREES_FORMAT} file (format field {fmt!r})")
        if int(z["format_version"]) > TREES_FORMAT_VERSION:
            raise ValueError(f"{path}: format version {int(z['format_version'])} is newer than this mdsd_fast")
        try:
            return TreeDataset({k: z[k] for k in z.files})
        except KeyError as exc:
            raise ValueError(f"{path}: the file has no {exc.args[0]!r} array") from None
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{path}: {exc}") from None
