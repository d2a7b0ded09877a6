"""Served logs for testing the check: responses drawn from the shipped distributions, emitted by the
package's engine kernels (lossless) or by reproductions of published losslessness bugs.

Each position of a response is a row of a shipped dataset (SmolLM2-135M or Gemma-3-270M), drawn
at random among the rows of the response's temperature. The server samples with ``top_k``
(default 50): p and q of the row are cut to their ``top_k`` most probable tokens and renormalised,
and that processed p is what the log records (its ``top_logprobs`` most probable tokens) and what
a lossless server emits from. Tokens are named ``tok<id>`` (the shipped data holds ids, not text).

Engines (``ENGINES``; docs/guide/served.md gives each bug's source and what the reproduction does):

* ``vllm``: chains of ``gamma`` drafts sampled from q, verified by :func:`mdsd_fast.rejection_sample`
  (vLLM's rejection sampler), the bonus token sampled from p. Lossless.
* ``sglang``: a root with ``gamma`` children (q's most probable tokens), verified by
  :func:`mdsd_fast.tree_speculative_sampling` with SGLang's rule (thresholds 1). Lossless.
* ``union``: rtp-llm's MTP rule before PR #1295: a top-1 draft d is accepted when the target's own
  sample equals it *or* ``u < p(d)``, so with probability 1 - (1 - p(d))^2; otherwise a draw from
  max(p - onehot(d), 0).
* ``argmax``: mistral.rs before PR #2424: the speculative path returns the argmax of the processed
  distribution instead of a sample (the log still records the distribution).
* ``top-p``: a top-p mismatch of the vLLM PR #48928 class: the log records canonical top-p
  (``top_p`` = 0.9: the smallest prefix holding at least 0.9), the rejection sampler's target rows
  keep the largest prefix holding at most 0.9 (at least one token).
* ``onehot-q``: drafts sampled from q, but the verifier is given a one-hot q on q's most probable
  token (the greedy drafter's contract) through :func:`mdsd_fast.rejection_sample`: the draft's
  top token is emitted with probability q(top) p(top) instead of p(top).
* ``tree-as-chain``: a tree of ``gamma`` sibling drafts from q at one position, flattened and
  verified as a chain by :func:`mdsd_fast.rejection_sample`: sibling j is tested at position j
  against that position's p and q although it was drawn from position 0's q.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data import load_dataset
from ..engines import rejection_sample, tree_speculative_sampling

__all__ = ["ENGINES", "LOSSLESS", "ServedRows", "generate_served", "served_rows"]

LOSSLESS = ("vllm", "sglang")
ENGINES = (*LOSSLESS, "union", "argmax", "top-p", "onehot-q", "tree-as-chain")
TOP_P = 0.9


@dataclass(frozen=True)
class ServedRows:
    """The shipped rows as a server sees them: row r's tokens ``ids[r]`` (global ids, -1 padding;
    at least one padding slot), its processed target ``p[r]`` and draft ``q[r]`` on them."""

    ids: NDArray[np.int64]
    p: NDArray[np.float64]
    q: NDArray[np.float64]
    temperature: NDArray[np.float64]
    model: str


def _top(ids: NDArray[np.int64], v: NDArray[np.float64], k: int) -> dict[int, float]:
    order = np.lexsort((ids, -v))[:k]
    keep = order[v[order] > 0]
    return dict(zip(ids[keep].tolist(), (v[keep] / v[keep].sum()).tolist(), strict=True))


def _check(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {v!r}")
    return int(v)


def served_rows(model: str = "smollm2-135m", top_k: int = 50) -> ServedRows:
    """The shipped dataset of ``model`` processed with ``top_k`` (see the module docstring)."""
    top_k = _check("top_k", top_k, 1, 4096)
    ds = load_dataset(model=model)
    width = 2 * top_k + 1
    R = len(ds)
    ids = np.full((R, width), -1, np.int64)
    p, q = np.zeros((R, width)), np.zeros((R, width))
    for r in range(R):
        t, pr, qr = ds.sparse_row(r)
        tp, tq = _top(t, pr.astype(np.float64), top_k), _top(t, qr.astype(np.float64), top_k)
        union = sorted(tp.keys() | tq.keys())
        ids[r, : len(union)] = union
        p[r, : len(union)] = [tp.get(i, 0.0) for i in union]
        q[r, : len(union)] = [tq.get(i, 0.0) for i in union]
    temps = np.asarray([m["temperature"] for m in ds.meta], np.float64)
    return ServedRows(ids, p, q, temps, model)


def _sample(rows: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.int64]:
    """One inverse-CDF draw per row."""
    cum = np.cumsum(rows, axis=1)
    u = rng.random(rows.shape[0]) * cum[:, -1]
    return np.asarray(np.minimum((cum <= u[:, None]).sum(axis=1), rows.shape[1] - 1), dtype=np.int64)


def _top_p_rows(p: NDArray[np.float64], canonical: bool) -> NDArray[np.float64]:
    """Top-p (TOP_P) of each row, renormalised: canonical keeps the smallest prefix holding at
    least TOP_P; the other rule the largest prefix holding at most TOP_P (at least one token)."""
    order = np.argsort(-p, axis=1, kind="stable")
    sp = np.take_along_axis(p, order, axis=1)
    before = np.cumsum(sp, axis=1) - sp
    keep = before < TOP_P if canonical else (before + sp <= TOP_P)
    keep[:, 0] = True
    out = np.zeros_like(p)
    np.put_along_axis(out, order, np.where(keep, sp, 0.0), axis=1)
    return np.asarray(out / out.sum(axis=1, keepdims=True), dtype=np.float64)


def _chain(P: Any, Q: Any, drafts: Any, qv: Any, rng: np.random.Generator) -> NDArray[np.int64]:
    """vLLM's rejection sampler on B chains of gamma drafts (P, Q: (B, gamma + 1, W) target and
    draft rows, the last one the bonus row; qv: the draft rows the verifier is given)."""
    B, g1, W = P.shape
    g = g1 - 1
    bonus = _sample(P[:, g], rng)
    return np.asarray(
        rejection_sample(
            drafts.reshape(-1),
            np.full(B, g),
            qv.reshape(B * g, W),
            P[:, :g].reshape(B * g, W),
            bonus,
            uniform_probs=rng.random(B * g),
            recovery_noise=rng.exponential(size=(B, W)) + 1e-300,
            threads=1,
        ),
        dtype=np.int64,
    )


def _step(engine: str, rows: NDArray[np.int64], sr: ServedRows, P: Any, rng: np.random.Generator) -> Any:
    """One step of B responses at rows (B, gamma + 1): (B, gamma + 1) local token ids, -1 after the
    emitted ones; row j's token is in row j's local ids (tree-as-chain translates them)."""
    B, g1 = rows.shape
    g = g1 - 1
    Q = sr.q[rows]
    if engine == "argmax":
        return np.argmax(P, axis=2)
    if engine in ("vllm", "onehot-q", "top-p"):
        drafts = np.stack([_sample(Q[:, j], rng) for j in range(g)], axis=1)
        qv = Q[:, :g]
        if engine == "onehot-q":
            qv = np.zeros_like(qv)
            np.put_along_axis(qv, np.argmax(Q[:, :g], axis=2)[:, :, None], 1.0, axis=2)
        return _chain(P, Q, drafts, qv, rng)
    if engine == "tree-as-chain":
        first = np.stack([_sample(Q[:, 0], rng) for _ in range(g)], axis=1)  # siblings from q at row 0
        glob = np.take_along_axis(sr.ids[rows[:, 0]], first, axis=1)
        drafts = np.empty_like(first)
        for j in range(g):  # sibling j in row j's local ids; absent -> a padding slot (p = q = 0)
            ids_j = sr.ids[rows[:, j]]
            hit = ids_j == glob[:, j : j + 1]
            drafts[:, j] = np.where(hit.any(axis=1), hit.argmax(axis=1), ids_j.shape[1] - 1)
        return _chain(P, Q, drafts, Q[:, :g], rng)
    if engine == "union":
        out = np.full((B, g1), -1, np.int64)
        live = np.ones(B, bool)
        for j in range(g):
            d = np.argmax(Q[:, j], axis=1)
            target = _sample(P[:, j], rng)
            pd = P[np.arange(B), j, d]
            acc = (target == d) | (rng.random(B) < pd)
            resid = P[:, j].copy()
            resid[np.arange(B), d] = 0.0
            resid[resid.sum(axis=1) == 0, 0] = 1.0  # p one-hot on d: never used (accepted surely)
            out[live, j] = np.where(acc, d, _sample(resid, rng))[live]
            live &= acc
        out[live, g] = _sample(P[live, g], rng)
        return out
    if engine == "sglang":
        N = g + 1
        cand = np.zeros((B, N), np.int64)
        cand[:, 1:] = np.argsort(-Q[:, 0], axis=1, kind="stable")[:, :g]
        nxt = np.full((B, N), -1, np.int64)
        nxt[:, 0] = 1
        sib = np.full((B, N), -1, np.int64)
        sib[:, 1:g] = np.arange(2, N)
        res = tree_speculative_sampling(
            cand,
            nxt,
            sib,
            P,  # node 0's row: the root's p; child c's row: its own next position
            uniform_samples=rng.random((B, N)),
            uniform_samples_for_final_sampling=rng.random(B),
            num_speculative_tokens=2,
            threads=1,
        )
        pred = np.asarray(res.predicts, np.int64).reshape(B, N)
        acc = np.asarray(res.accept_index, np.int64)
        out = np.full((B, g1), -1, np.int64)
        took = acc[:, 1] >= 0
        child = np.where(took, acc[:, 1] % N, 0)
        out[:, 0] = np.where(took, cand[np.arange(B), child], pred[:, 0])
        # the token after the accepted child sits in that child's row: put it at the child's column
        out[took, child[took]] = pred[took, child[took]]
        return out, child
    raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")


def generate_served(
    out: str | os.PathLike[str],
    engine: str = "vllm",
    *,
    responses: int = 100,
    length: int = 64,
    model: str = "smollm2-135m",
    gamma: int = 3,
    top_logprobs: int = 20,
    top_k: int = 50,
    seed: int = 0,
    rows: ServedRows | None = None,
) -> Path:
    """Write a served log (OpenAI-style JSONL, one response per line) of ``responses`` responses of
    ``length`` tokens each, emitted by ``engine`` (one of ``ENGINES``; ``LOSSLESS`` are lossless)
    from the shipped data of ``model``; returns the path. ``rows`` reuses :func:`served_rows`."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
    top_k = _check("top_k", top_k, 1, 4096)
    responses = _check("responses", responses, 1, 10**8)
    length = _check("length", length, 1, 10**6)
    gamma = _check("gamma", gamma, 1, 16)
    top_logprobs = _check("top_logprobs", top_logprobs, 0, 2 * top_k)
    seed = _check("seed", seed, 0, 2**63 - 1)
    sr = rows if rows is not None else served_rows(model, top_k)
    if top_logprobs > sr.ids.shape[1]:
        raise ValueError(f"top_logprobs: at most {sr.ids.shape[1]} tokens are served per row, got {top_logprobs}")
    rng = np.random.default_rng(seed)
    logged = _top_p_rows(sr.p, canonical=True) if engine == "top-p" else sr.p
    target = _top_p_rows(sr.p, canonical=False) if engine == "top-p" else sr.p
    tops = [_tops_json(sr.ids[r], logged[r], top_logprobs) for r in range(len(sr.ids))]
    temps = np.unique(sr.temperature)
    path = Path(out)
    tmp = path.with_name(path.name + ".tmp")
    block = 256
    with open(tmp, "w", encoding="utf-8") as fh:
        for start in range(0, responses, block):
            B = min(block, responses - start)
            t_of = temps[rng.integers(temps.size, size=B)]
            pools = [np.flatnonzero(sr.temperature == t) for t in t_of]
            toks: list[list[tuple[int, int]]] = [[] for _ in range(B)]
            while min(len(t) for t in toks) < length:
                r = np.stack([pool[rng.integers(pool.size, size=gamma + 1)] for pool in pools])
                res = _step(engine, r, sr, target[r], rng)
                emitted, child = (res, None) if not isinstance(res, tuple) else res
                for b in range(B):
                    order = range(gamma + 1) if child is None else (0, int(child[b])) if child[b] else (0,)
                    for j in order:
                        if emitted[b, j] < 0 or len(toks[b]) >= length:
                            break
                        toks[b].append((int(r[b, j]), int(emitted[b, j])))
            for b in range(B):
                fh.write(_record(start + b, float(t_of[b]), toks[b], sr, logged, tops, engine))
    os.replace(tmp, path)
    return path


def _tops_json(ids: NDArray[np.int64], p: NDArray[np.float64], k: int) -> str:
    order = np.lexsort((ids, -p))[:k]
    order = order[p[order] > 0]
    return json.dumps([{"token": f"tok{int(ids[i])}", "logprob": math.log(p[i])} for i in order])


def _record(i: int, temp: float, toks: list[tuple[int, int]], sr: ServedRows, p: Any, tops: list[str], e: str) -> str:
    content = ",".join(
        f'{{"token": "tok{int(sr.ids[r, t])}", "logprob": {math.log(p[r, t]) if p[r, t] > 0 else -9999.0!r}, '
        f'"top_logprobs": {tops[r]}}}'
        for r, t in toks
    )
    head = f'{{"id": "served-{i}", "model": "{sr.model}", "engine": "{e}", "temperature": {temp!r}, '
    return head + f'"choices": [{{"index": 0, "logprobs": {{"content": [{content}]}}}}]}}\n'
