"""Grow real draft trees from a language model (torch and transformers only here).

At a context position of the flat dataset (docs/guide/data.md: same prompts, temperatures, target
continuations and recorded positions), the DRAFT grows a tree one depth at a time: the children
of a node are drawn by the shape's scheme from q at that node (the draft's distribution given the
context plus the path). Then the TARGET is evaluated at every node in one forward over the context
followed by the tree's tokens with a tree attention mask (each tree token attends to the context
and its own ancestors, at position ``len(context) - 1 + depth``), and p and q of every node are
recorded in the contract of docs/guide/trees_verification.md §1. The drafts' q at the nodes expanded
are the rows the children were drawn from; q at the leaves comes from one more draft forward.

The shapes (:data:`SHAPES`) are the ones engines use; docs/guide/data.md "Draft trees" lists them.
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._torch import torch_module
from ..trees._raw import RawTree, check_tree
from ..trees.builder import TreeDatasetBuilder
from ..trees.shapes import SHAPES, TreeShape
from .distributions import (
    DEFAULT_DRAFTS,
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_NGRAM_CORPUS,
    DEFAULT_RECORD_EVERY,
    DEFAULT_SEED,
    DEFAULT_TEMPERATURES,
    LayerSkipDraft,
    NGramDraft,
    Prompt,
    _prompt_ids,
    _seed_for,
    generate,
    load_prompts,
    model_eos_ids,
    ngram_draft_from_text,
    softmax_T,
)

__all__ = ["build_tree_dataset", "grow_tree", "node_probs"]


def _tree_inputs(context: Sequence[int], parent: Sequence[int], token: Sequence[int]) -> tuple[Any, Any, Any]:
    """Input ids, the additive tree attention mask (1, 1, L, L) and the position ids."""
    torch = torch_module()
    L0, n = len(context), len(parent)
    L = L0 + n - 1
    allow = torch.zeros(L, L, dtype=torch.bool)
    allow[:, :L0] = torch.tril(torch.ones(L, L0, dtype=torch.bool))
    depth = [0] * n
    for i in range(1, n):
        depth[i] = depth[parent[i]] + 1
        j = i
        while j > 0:  # a tree token sees the context and its ancestors (itself included)
            allow[L0 - 1 + i, L0 - 1 + j] = True
            j = parent[j]
    ids = torch.tensor(list(context) + list(token[1:]), dtype=torch.long)
    pos = torch.tensor(list(range(L0)) + [L0 - 1 + d for d in depth[1:]], dtype=torch.long)
    mask = torch.zeros(L, L, dtype=torch.float32).masked_fill(~allow, float("-inf"))
    return ids, mask[None, None], pos[None]


def node_probs(
    model: Any, context: Sequence[int], parent: Sequence[int], token: Sequence[int], T: float, V: int
) -> NDArray[np.float64]:
    """(N, V) next-token distributions at every node: softmax(logits / T) of ``model`` (a causal
    LM, a :class:`LayerSkipDraft` or an :class:`NGramDraft`) given the context plus the path."""
    if isinstance(model, NGramDraft):  # no attention: q of each path directly, as its logits() does
        paths = [list(context)]
        for i in range(1, len(parent)):
            paths.append(paths[parent[i]] + [int(token[i])])
        with np.errstate(divide="ignore"):
            return softmax_T(np.log(np.stack([model.probs(h) for h in paths])), T)[:, :V]
    ids, mask, pos = _tree_inputs(context, parent, token)
    kw = {"attention_mask": mask, "position_ids": pos}
    if isinstance(model, LayerSkipDraft):
        logits = model.logits(ids, **kw)
    else:
        torch = torch_module()
        with torch.no_grad():
            logits = model(input_ids=ids[None], use_cache=False, **kw).logits[0]
    L0 = len(context)
    return softmax_T(logits[L0 - 1 :, :V], T)


def _ranked(q: NDArray[np.float64], n: int) -> list[int]:
    """The n most probable tokens with q > 0 (ties by token id)."""
    top = np.flatnonzero(q > 0)
    return [int(t) for t in top[np.lexsort((top, -q[top]))][:n]]


def _draw(q: NDArray[np.float64], n: int, replace: bool, rng: np.random.Generator) -> list[int]:
    if replace:
        return [int(t) for t in rng.choice(q.size, size=n, p=q / q.sum())]
    law, out = q.copy(), []
    for _ in range(min(n, int(np.count_nonzero(q)))):
        t = int(rng.choice(q.size, p=law / law.sum()))
        out.append(t)
        law[t] = 0.0
    return out


def grow_tree(
    target: Any, draft: Any, context: Sequence[int], shape: TreeShape, T: float, V: int, rng: np.random.Generator
) -> RawTree:
    """Draft a tree of ``shape`` at ``context`` with ``draft`` and evaluate ``target`` at every node."""
    parent, token, mult = [-1], [-1], [shape.k]
    rank: list[tuple[int, ...]] = [()]  # ranks of the path's tokens in q (static trees)
    draws: dict[int, list[int]] = {}
    scheme: dict[int, str] = {}
    q_used: dict[int, NDArray[np.float64]] = {}
    logp = [0.0]  # log path probability under q (dynamic trees)
    frontier = [0]
    for d in range(shape.depth):
        Q = node_probs(draft, context, parent, token, T, V)
        if shape.kind == "dynamic":
            frontier = sorted(frontier, key=lambda i: (-logp[i], i))[: shape.beam]
        nxt = []
        for i in frontier:
            q = Q[i]
            if shape.kind == "chain":
                toks, s = _draw(q, 1, True, rng), "iid"
            elif shape.kind == "branch":
                toks, s = _draw(q, shape.widths[d], False, rng), "wor"
            elif shape.kind == "kseq":
                toks, s = _draw(q, mult[i], True, rng), "iid"
            elif shape.kind == "static":
                n = sum(1 for c in shape.choices if len(c) == d + 1 and c[:d] == rank[i])
                toks, s = _ranked(q, n), "topk"
            else:
                toks, s = _ranked(q, shape.k), "topk"
            if not toks:
                continue
            q_used[i], scheme[i], draws[i] = q, s, []
            for r, t in enumerate(toks):
                kids = [c for c in draws[i] if token[c] == t]
                if kids:  # an i.i.d. repeat: same child, one more sequence through it
                    mult[kids[0]] += 1
                    draws[i].append(kids[0])
                    continue
                parent.append(i)
                token.append(t)
                rank.append((*rank[i], r))
                mult.append(1)
                with np.errstate(divide="ignore"):
                    logp.append(logp[i] + float(np.log(q[t])))
                draws[i].append(len(parent) - 1)
                nxt.append(len(parent) - 1)
        frontier = nxt
    if shape.kind == "dynamic":  # keep the budget best nodes (ancestors first on ties)
        keep = sorted(range(1, len(parent)), key=lambda i: (-logp[i], len(rank[i]), i))[: shape.budget]
        old = [0, *sorted(keep)]
        new_id = {o: j for j, o in enumerate(old)}
        parent = [-1] + [new_id[parent[o]] for o in old[1:]]
        token = [token[o] for o in old]
        draws = {new_id[o]: [new_id[c] for c in cs if c in new_id] for o, cs in draws.items() if o in new_id}
        draws = {i: cs for i, cs in draws.items() if cs}
        scheme = {new_id[o]: s for o, s in scheme.items() if o in new_id and new_id[o] in draws}
        q_used = {new_id[o]: r for o, r in q_used.items() if o in new_id and new_id[o] in draws}
    n = len(parent)
    q_final = node_probs(draft, context, parent, token, T, V)
    q_all = np.stack([q_used.get(i, q_final[i]) for i in range(n)])
    p_all = node_probs(target, context, parent, token, T, V)
    ptr = np.concatenate([[0], np.cumsum([len(draws.get(i, [])) for i in range(n)])])
    child = [c for i in range(n) for c in draws.get(i, [])]
    return check_tree(parent, token, p_all, q_all, ptr, np.asarray(child, dtype=np.int64),
                      [scheme.get(i, "") for i in range(n)])  # fmt: skip


def tree_rng(seed: int, prompt_id: str, T: float, position: int, draft: str, shape: str) -> np.random.Generator:
    """The random stream of one tree: keyed by everything that names it, so any subset regenerates."""
    key = [int(seed), zlib.crc32(prompt_id.encode()), int(round(T * 1000)), int(position)]
    return np.random.default_rng(np.random.SeedSequence([*key, zlib.crc32(draft.encode()), zlib.crc32(shape.encode())]))


def contexts(
    model: Any, tok: Any, prompt: Prompt, T: float, positions: Sequence[int] | None = None
) -> list[tuple[int, list[int]]]:
    """(position, context ids) at the flat dataset's recorded positions of (prompt, T): the same
    seeded target continuation as ``mdsd-fast extract --default-dataset``."""
    ids = _prompt_ids(tok, prompt, True)
    new = generate(model, ids, T, DEFAULT_MAX_NEW_TOKENS, seed=_seed_for(DEFAULT_SEED, prompt.id, T),
                   eos_ids=model_eos_ids(model, tok))  # fmt: skip
    pos = range(0, len(new), DEFAULT_RECORD_EVERY)
    return [(j, ids + new[:j]) for j in pos if positions is None or j in positions]


def default_tree_drafts(model: Any, tok: Any, skips: dict[str, tuple[int, ...]] | None = None) -> dict[str, Any]:
    """The flat dataset's drafts: the layer-skip sets ``skips`` (default SmolLM2's skip2, skip4;
    a preset's ``drafts``) and the bigram model ngram2 over the model's own tokenizer."""
    skips = DEFAULT_DRAFTS if skips is None else skips
    drafts: dict[str, Any] = {name: LayerSkipDraft(model, skip, name) for name, skip in skips.items()}
    drafts["ngram2"] = ngram_draft_from_text(tok, DEFAULT_NGRAM_CORPUS.read_text(encoding="utf-8"),
                                             int(model.config.vocab_size), order=2, name="ngram2",
                                             corpus=DEFAULT_NGRAM_CORPUS.name)  # fmt: skip
    return drafts


@dataclass(frozen=True)
class TreeRun:
    """Which contexts are grown (``positions`` None: all recorded ones), the sparse rows kept and the
    drafts grown (None: all of the model's)."""

    positions: tuple[int, ...] | None
    kmax: int
    mass_cut: float
    drafts: tuple[str, ...] | None = None


#: the shipped sample: one prompt per domain, both temperatures, generated position 8; <= 32 tokens per row
SAMPLE = TreeRun((8,), 32, 1e-4)
#: the full tree dataset (outside the wheel): every prompt and recorded position
FULL = TreeRun(None, 4096, 1e-6)
#: the shipped sample per model. Gemma's trees fit the ~280 kB the 25 MB data budget leaves: the two
#: layer-skip drafts (the bigram's trees accept ~0.1 tokens) and <= 10 tokens per distribution
#: (docs/findings/gemma.md "Draft trees": the sizes of the other choices and what the cut costs)
SAMPLES: dict[str, TreeRun] = {"smollm2-135m": SAMPLE, "gemma3-270m": TreeRun((8,), 10, 1e-4, ("skip1", "skip4"))}


def build_tree_dataset(
    out: str | Path | None, *, sample: bool = False, threads: int = 1, shapes: Sequence[str] | None = None,
    progress: bool = True, model: str = "smollm2-135m", kmax: int | None = None,
) -> TreeDatasetBuilder:  # fmt: skip
    """Grow every shape with every draft of ``model`` (a preset of :mod:`mdsd_fast.extract.presets`) at
    its flat dataset's contexts and write ``out`` when given (``sample``: the shipped sample, see
    :data:`SAMPLES`; otherwise every prompt of the flat dataset and position). ``kmax``: keep this
    many top tokens per distribution in the builder (at least the file's cap; its ``save(kmax=)``
    then writes any smaller cap exactly as a run with it would)."""
    from .presets import preset, preset_prompts

    pr_ = preset(model)
    torch = torch_module()
    torch.set_num_threads(int(threads))
    cfg = SAMPLES[pr_.name] if sample else FULL
    target, tok = pr_.load()
    V = int(target.config.vocab_size)
    drafts = default_tree_drafts(target, tok, pr_.drafts)
    if cfg.drafts is not None:
        drafts = {d: drafts[d] for d in cfg.drafts}
    prompts = preset_prompts(pr_) if not sample else load_prompts()
    if sample:  # the first prompt of each domain
        prompts = [p for i, p in enumerate(prompts) if p.domain not in {q.domain for q in prompts[:i]}]
    names = list(shapes) if shapes else list(SHAPES)
    cmd = "mdsd-fast extract-trees" + (f" --model {pr_.name}" if pr_.name != "smollm2-135m" else "")
    cmd += " --sample" if sample else ""
    info = {"target": pr_.target, "command": cmd, "model": pr_.name,
            "seed": DEFAULT_SEED, "torch": str(torch.__version__), "shapes": {n: repr(SHAPES[n]) for n in names}}  # fmt: skip
    builder = TreeDatasetBuilder(V, mass_cut=cfg.mass_cut, kmax=max(cfg.kmax, kmax or 0), info=info)
    t0 = time.time()
    for T in DEFAULT_TEMPERATURES:
        for pr in prompts:
            for j, ctx in contexts(target, tok, pr, T, cfg.positions):
                for dname, dr in drafts.items():
                    for sname in names:
                        rng = tree_rng(DEFAULT_SEED, pr.id, T, j, dname, sname)
                        tree = grow_tree(target, dr, ctx, SHAPES[sname], T, V, rng)
                        meta = {"prompt_id": pr.id, "domain": pr.domain, "temperature": T, "position": j,
                                "draft": dname, "shape": sname}  # fmt: skip
                        builder.add(tree, meta, ctx)
                if progress:
                    print(f"  {len(builder)} trees, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    if out is not None:
        builder.save(out, kmax=cfg.kmax)
    return builder
