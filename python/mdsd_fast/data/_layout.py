"""The row layout of an :class:`~mdsd_fast.data.LMDataset`: its row fields, its consistency rules,
the compaction of a view and the matching of a selection.

A *context* holds a run of ascending token ids and the target's values on them
(``ctx_offsets`` into ``token_ids`` / ``p_values``); a *row* points to its context and holds the
draft's values on the same tokens (``q_values``, in row order); contexts point to prompts, rows
to drafts. :func:`check` refuses arrays that break this (every constructor and every loaded file
goes through it); :func:`compact` gives a view's arrays with the unused contexts, prompts and
drafts dropped, ready for ``_format.encode``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ._dataset import LMDataset


def check(ds: LMDataset) -> None:
    """A ValueError naming the first broken rule of ``ds``'s stored arrays."""
    C = ds._ctx_offsets.size - 1
    if C < 0 or ds._ctx_offsets[0] != 0 or np.any(np.diff(ds._ctx_offsets) < 0):
        raise ValueError("ctx_offsets must start at 0 and be non-decreasing")
    N = int(ds._ctx_offsets[-1])
    if ds._token_ids.shape != (N,) or ds._p_values.shape != (N,):
        raise ValueError("token_ids and p_values must have ctx_offsets[-1] entries")
    if N and (ds._token_ids.min() < 0 or ds._token_ids.max() >= ds.vocab_size):
        raise ValueError("token ids out of range [0, vocab_size)")
    for name in ("_p_trunc", "_p_quant", "_ctx_prompt", "_ctx_temperature", "_ctx_position", "_ctx_token"):
        if getattr(ds, name).shape != (C,):
            raise ValueError(f"{name[1:]} must have one entry per context ({C})")
    B = ds._row_ctx.size
    if ds._row_draft.shape != (B,) or ds._q_trunc.shape != (B,) or ds._q_quant.shape != (B,):
        raise ValueError("row_draft and q_trunc must have one entry per row")
    if B and (ds._row_ctx.min() < 0 or ds._row_ctx.max() >= C):
        raise ValueError("row_ctx out of range")
    if B and (ds._row_draft.min() < 0 or ds._row_draft.max() >= len(ds._draft_names)):
        raise ValueError("row_draft out of range")
    if ds._q_values.shape != (int(ds._row_qoff[-1]),):
        raise ValueError("q_values must hold one value per (row, context token)")
    if C and (ds._ctx_prompt.min() < 0 or ds._ctx_prompt.max() >= len(ds._prompt_ids)):
        raise ValueError("ctx_prompt out of range")
    if len(ds._prompt_domains) != len(ds._prompt_ids):
        raise ValueError("prompt_domains and prompt_ids differ in length")


def compact(ds: LMDataset) -> dict[str, Any]:
    """Arrays of the view ``ds`` with unused contexts, prompts and drafts dropped."""
    rows = ds._rows
    ctx_used, row_ctx = np.unique(ds._row_ctx[rows], return_inverse=True)
    order = np.argsort(row_ctx, kind="stable")
    rows, row_ctx = rows[order], row_ctx[order]
    lens = np.diff(ds._ctx_offsets)[ctx_used]
    ctx_offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    take = (
        np.concatenate([np.arange(ds._ctx_offsets[c], ds._ctx_offsets[c + 1]) for c in ctx_used])
        if ctx_used.size
        else np.zeros(0, np.int64)
    )
    qtake = (
        np.concatenate([np.arange(ds._row_qoff[r], ds._row_qoff[r + 1]) for r in rows])
        if rows.size
        else np.zeros(0, np.int64)
    )
    prompts_used, ctx_prompt = np.unique(ds._ctx_prompt[ctx_used], return_inverse=True)
    drafts_used, row_draft = np.unique(ds._row_draft[rows], return_inverse=True)
    return dict(
        vocab_size=ds.vocab_size,
        ctx_offsets=ctx_offsets,
        token_ids=ds._token_ids[take.astype(np.int64)],
        p_values=ds._p_values[take.astype(np.int64)],
        p_trunc=ds._p_trunc[ctx_used],
        p_quant=ds._p_quant[ctx_used],
        q_quant=ds._q_quant[rows],
        row_ctx=row_ctx.astype(np.int64),
        row_draft=row_draft.astype(np.int64),
        q_values=ds._q_values[qtake.astype(np.int64)],
        q_trunc=ds._q_trunc[rows],
        ctx_prompt=ctx_prompt.astype(np.int64),
        ctx_temperature=ds._ctx_temperature[ctx_used],
        ctx_position=ds._ctx_position[ctx_used],
        ctx_token=ds._ctx_token[ctx_used],
        prompt_ids=ds._prompt_ids[prompts_used],
        prompt_domains=ds._prompt_domains[prompts_used],
        draft_names=ds._draft_names[drafts_used],
        draft_specs=ds._draft_specs[drafts_used],
        info=ds.info,
    )


#: Row fields available through LMDataset.column() and in every .meta record.
ROW_FIELDS = (
    "row",
    "context",
    "draft",
    "temperature",
    "domain",
    "prompt_id",
    "position",
    "token",
    "p_truncation",
    "q_truncation",
    "p_quantization",
    "q_quantization",
    "n_tokens",
)


def as_str_array(values: Sequence[str]) -> NDArray[np.str_]:
    arr = np.asarray(list(values), dtype=str)
    if arr.size == 0:
        arr = np.zeros(0, dtype="<U1")
    return arr


def match(values: NDArray[Any], wanted: Any, *, numeric: bool = False) -> NDArray[np.bool_]:
    if isinstance(wanted, (str, bytes)) or not isinstance(wanted, Iterable):
        wanted = [wanted]
    wanted = list(wanted)
    mask = np.zeros(values.shape[0], dtype=bool)
    for w in wanted:
        if numeric:
            mask |= np.isclose(values.astype(np.float64), float(w), rtol=0.0, atol=1e-9)
        else:
            mask |= values == w
    return mask
