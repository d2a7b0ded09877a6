"""Datasets built from distributions: :class:`DatasetBuilder` (contexts of a model run, each
distribution kept on the fewest tokens holding all but ``tau`` of its mass, :func:`top_mass_tokens`)
and :func:`from_arrays` (your own dense rows, kept exactly)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._dataset import LMDataset
from ._format import MAX_TRUNCATION


def top_mass_tokens(dist: NDArray[np.floating[Any]], tau: float = MAX_TRUNCATION) -> NDArray[np.int64]:
    """Sorted ids of the fewest most-probable tokens holding at least ``1 - tau`` of ``dist``'s mass.

    ``dist`` is a 1-D distribution (summing to 1). Ties are broken toward lower ids.
    """
    d = np.asarray(dist, dtype=np.float64)
    total = d.sum()
    order = np.argsort(-d, kind="stable")
    cum = np.cumsum(d[order])
    k = int(np.searchsorted(cum, total - tau * total, side="left")) + 1
    k = min(max(k, 1), d.size)
    return np.sort(order[:k])


def _cat(xs: Sequence[NDArray[Any]], dtype: Any) -> NDArray[Any]:
    """The arrays end to end as ``dtype`` (an empty array of that dtype for no arrays)."""
    return np.concatenate(xs).astype(dtype) if xs else np.zeros(0, dtype)


class DatasetBuilder:
    """Accumulates contexts (one target distribution and the drafts' distributions for one prefix)
    and builds an :class:`LMDataset`, keeping per distribution the tokens carrying all but
    ``tau`` of its mass.

    ``max_tokens`` makes a sparse sample: each distribution keeps at most that many of its most
    probable tokens, so its recorded truncation may exceed ``tau`` (a context still stores the
    union over its distributions). Used where a full row cannot ship (V = 262,144, docs/guide/data.md).
    """

    def __init__(
        self,
        vocab_size: int,
        draft_names: Sequence[str],
        *,
        draft_specs: Sequence[Mapping[str, Any]] | None = None,
        tau: float = MAX_TRUNCATION,
        max_tokens: int | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> None:
        if not 0 <= tau <= MAX_TRUNCATION:
            raise ValueError(f"tau must be in [0, {MAX_TRUNCATION}]")
        if max_tokens is not None and (isinstance(max_tokens, bool) or int(max_tokens) != max_tokens or max_tokens < 1):
            raise ValueError(f"max_tokens: expected None or a positive integer, got {max_tokens!r}")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.vocab_size = int(vocab_size)
        self.draft_names = list(draft_names)
        self.draft_specs = [json.dumps(dict(s), sort_keys=True) for s in (draft_specs or [{}] * len(self.draft_names))]
        self.tau = float(tau)
        self.info = dict(info or {})
        self._prompts: dict[str, str] = {}
        self._tokens: list[NDArray[np.int64]] = []
        self._p: list[NDArray[np.float64]] = []
        self._p_trunc: list[float] = []
        self._q: list[NDArray[np.float64]] = []  # one (D, n) block per context
        self._q_trunc: list[NDArray[np.float64]] = []
        self._ctx: list[tuple[str, float, int, int]] = []

    def __len__(self) -> int:
        return len(self._ctx)

    def add(
        self,
        p: ArrayLike,
        qs: ArrayLike,
        *,
        prompt_id: str,
        domain: str,
        temperature: float,
        position: int,
        token: int = -1,
    ) -> None:
        """Add one context: ``p`` of shape (V,), ``qs`` of shape (D, V) in draft order (float64 best)."""
        p64 = np.asarray(p, dtype=np.float64)
        q64 = np.asarray(qs, dtype=np.float64).reshape(len(self.draft_names), -1)
        if p64.shape != (self.vocab_size,) or q64.shape[1] != self.vocab_size:
            raise ValueError("distributions must have vocab_size entries")
        keep = self._kept(p64)
        for d in range(q64.shape[0]):
            keep = np.union1d(keep, self._kept(q64[d]))
        p_tr = max(0.0, 1.0 - float(p64[keep].sum()) / float(p64.sum()))
        q_tr = np.maximum(0.0, 1.0 - q64[:, keep].sum(axis=1) / q64.sum(axis=1))
        capped = self.max_tokens is not None
        if not capped and (p_tr > self.tau or np.any(q_tr > self.tau)):  # pragma: no cover - by construction
            raise AssertionError("truncation above tau")
        old = self._prompts.setdefault(prompt_id, domain)
        if old != domain:
            raise ValueError(f"prompt {prompt_id!r} given two domains ({old!r}, {domain!r})")
        self._tokens.append(keep.astype(np.int64))
        self._p.append(p64[keep] / p64.sum())
        self._p_trunc.append(p_tr)
        self._q.append(q64[:, keep] / q64.sum(axis=1, keepdims=True))
        self._q_trunc.append(q_tr)
        self._ctx.append((prompt_id, float(temperature), int(position), int(token)))

    def _kept(self, dist: NDArray[np.float64]) -> NDArray[np.int64]:
        # Aim slightly below tau so float rounding of the recorded sums cannot cross the limit.
        keep = top_mass_tokens(dist, 0.9 * self.tau)
        if self.max_tokens is not None and keep.size > self.max_tokens:
            keep = np.sort(np.argsort(-dist, kind="stable")[: self.max_tokens])
        return keep

    def build(self) -> LMDataset:
        pids = list(self._prompts)
        pindex = {k: i for i, k in enumerate(pids)}
        C, D = len(self._ctx), len(self.draft_names)
        lens = np.array([t.size for t in self._tokens], dtype=np.int64)
        ctx_offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        q_values = _cat([blk[d] for blk in self._q for d in range(D)], np.float64)
        return LMDataset(
            vocab_size=self.vocab_size,
            ctx_offsets=ctx_offsets,
            token_ids=_cat(self._tokens, np.int64),
            p_values=_cat(self._p, np.float64),
            p_trunc=np.array(self._p_trunc, dtype=np.float64),
            row_ctx=np.repeat(np.arange(C, dtype=np.int64), D),
            row_draft=np.tile(np.arange(D, dtype=np.int64), C),
            q_values=q_values,
            q_trunc=np.concatenate(self._q_trunc) if C else np.zeros(0),
            ctx_prompt=np.array([pindex[c[0]] for c in self._ctx], dtype=np.int64),
            ctx_temperature=np.array([c[1] for c in self._ctx], dtype=np.float64),
            ctx_position=np.array([c[2] for c in self._ctx], dtype=np.int64),
            ctx_token=np.array([c[3] for c in self._ctx], dtype=np.int64),
            prompt_ids=pids,
            prompt_domains=[self._prompts[k] for k in pids],
            draft_names=self.draft_names,
            draft_specs=self.draft_specs,
            info=self.info,
        )


def from_arrays(
    p: ArrayLike,
    q: ArrayLike,
    meta: Sequence[Mapping[str, Any]] | None = None,
    *,
    draft: str = "user",
    info: Mapping[str, Any] | None = None,
) -> LMDataset:
    """Wrap your own dense distributions ``p``, ``q`` of shape ``(B, V)`` in an :class:`LMDataset`.

    Values are kept exactly (in their dtype, float32 or float64; every nonzero entry is stored, so
    the truncation is 0). ``meta`` may give per row any of: draft, temperature, domain, prompt_id,
    position, token (missing fields get "user"/NaN/""/row number/-1).
    """
    P = np.asarray(p)
    Q = np.asarray(q)
    if P.ndim == 1:
        P = P[None, :]
    if Q.ndim == 1:
        Q = Q[None, :]
    if P.shape != Q.shape or P.ndim != 2:
        raise ValueError(f"p and q must both have shape (B, V); got {P.shape} and {Q.shape}")
    if P.dtype not in (np.float32, np.float64) or Q.dtype not in (np.float32, np.float64):
        raise TypeError("p and q must be float32 or float64 arrays")
    if not (np.isfinite(P).all() and np.isfinite(Q).all()) or (P < 0).any() or (Q < 0).any():
        raise ValueError("p and q must be finite and non-negative")
    B, V = P.shape
    meta = list(meta) if meta is not None else [{} for _ in range(B)]
    if len(meta) != B:
        raise ValueError(f"meta has {len(meta)} records for {B} rows")
    vdtype = np.result_type(P.dtype, Q.dtype)
    tokens, pv, qv = [], [], []
    for i in range(B):
        t = np.flatnonzero((P[i] > 0) | (Q[i] > 0))
        tokens.append(t)
        pv.append(P[i, t].astype(vdtype))
        qv.append(Q[i, t].astype(vdtype))
    lens = np.array([t.size for t in tokens], dtype=np.int64)
    drafts: dict[str, int] = {}
    prompts: dict[str, str] = {}
    row_draft, ctx_prompt = [], []
    for i, m in enumerate(meta):
        row_draft.append(drafts.setdefault(str(m.get("draft", draft)), len(drafts)))
        pid = str(m.get("prompt_id", f"row{i}" if "domain" in m else "user"))
        dom = str(m.get("domain", ""))
        if prompts.setdefault(pid, dom) != dom:
            raise ValueError(f"prompt_id {pid!r} given two domains")
        ctx_prompt.append(list(prompts).index(pid))
    return LMDataset(
        vocab_size=V,
        ctx_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        token_ids=_cat(tokens, np.int64),
        p_values=_cat(pv, vdtype),
        p_trunc=np.zeros(B),
        row_ctx=np.arange(B, dtype=np.int64),
        row_draft=np.array(row_draft, dtype=np.int64),
        q_values=_cat(qv, vdtype),
        q_trunc=np.zeros(B),
        ctx_prompt=np.array(ctx_prompt, dtype=np.int64),
        ctx_temperature=np.array([float(m.get("temperature", np.nan)) for m in meta], dtype=np.float64),
        ctx_position=np.array([int(m.get("position", i)) for i, m in enumerate(meta)], dtype=np.int64),
        ctx_token=np.array([int(m.get("token", -1)) for m in meta], dtype=np.int64),
        prompt_ids=list(prompts),
        prompt_domains=list(prompts.values()),
        draft_names=list(drafts),
        draft_specs=[json.dumps({"kind": "user"})] * len(drafts),
        info=dict(info or {"source": "from_arrays"}),
    )
