"""``to_log``: a served JSONL log stored in the package's log format (docs/guide/logs.md), one row
per position: ``p`` the logged top_logprobs (truncated: the unlogged mass is the tail), ``q`` the
emitted token alone (probability 1, complete). Token ids are first-appearance indices of the token
bytes, as ``mdsd-fast convert`` assigns them."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..logs.convert import ZERO_LOGPROB, _logprob, _records, _token_key
from .read import _temperature

__all__ = ["to_log"]

#: Positions written per block.
BLOCK = 4096


def to_log(
    jsonl: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    vocab_size: int,
    rows_per_shard: int = 100_000,
) -> Path:
    """Store the served JSONL log ``jsonl`` as a log directory ``out_dir`` that
    :func:`check_served` reads; ``vocab_size`` bounds the distinct tokens (ids are assigned in
    order of first appearance). Needs pyarrow (the ``logs`` extra)."""
    from ..logs import LogWriter

    src = Path(jsonl)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such JSONL file")
    vocab: dict[bytes, int] = {}
    rows: list[tuple[dict[int, float], int, dict[str, Any]]] = []
    with LogWriter(out_dir, vocab_size, rows_per_shard=rows_per_shard, info=dict(source="served-jsonl")) as w:
        for ln, rec, choices in _records(src):  # the converter's reader: file:line on any bad line
            temp = _temperature(rec)
            rid = str(rec.get("id", f"line{ln}"))
            for c, ch in enumerate(choices):
                lp = ch.get("logprobs") if isinstance(ch, dict) else None
                content = lp.get("content") if isinstance(lp, dict) else None
                if not isinstance(content, list):
                    raise ValueError(f"{src}:{ln}: choice {c} has no logprobs.content list")
                for j, pos in enumerate(content):
                    where = f"{src}:{ln}: choice {c} position {j}"
                    tops = pos.get("top_logprobs") if isinstance(pos, dict) else None
                    if not isinstance(tops, list) or not tops:
                        raise ValueError(f"{where}: no top_logprobs (a log row needs at least one)")
                    logged: dict[int, float] = {}
                    for i, e in enumerate(tops):
                        k = vocab.setdefault(_token_key(e, where, i), len(vocab))
                        v = _logprob(e, where)
                        logged[k] = logged.get(k, 0.0) + (0.0 if v <= ZERO_LOGPROB else math.exp(v))
                    emitted = vocab.setdefault(_token_key(pos, where), len(vocab))
                    meta = dict(prompt_id=rid if c == 0 else f"{rid}/{c}", position=j, temperature=temp)
                    meta["model"] = str(rec.get("model", ""))
                    rows.append((logged, emitted, meta))
                    if len(rows) >= BLOCK:
                        _flush(w, rows, len(vocab))
        _flush(w, rows, len(vocab))
    return Path(out_dir)


def _flush(w: Any, rows: list[Any], seen: int) -> None:
    if seen > w.V:
        raise ValueError(f"vocab_size: {seen} distinct tokens appear in the file, more than vocab_size = {w.V}")
    if not rows:
        return
    lens = [len(r[0]) for r in rows]
    ptr = np.concatenate(([0], np.cumsum(lens)))
    ids = np.fromiter((i for r in rows for i in r[0]), np.int64, sum(lens))
    probs = np.fromiter((v for r in rows for v in r[0].values()), np.float64, sum(lens))
    n = len(rows)
    q = (np.arange(n + 1), np.asarray([r[1] for r in rows], np.int64), np.ones(n))
    meta: dict[str, Any] = {k: [r[2][k] for r in rows] for k in ("model", "prompt_id", "position", "temperature")}
    meta["draft"] = ["emitted"] * n
    w.write((ptr, ids, probs), q, p_complete=False, q_complete=True, meta=meta)
    rows.clear()
