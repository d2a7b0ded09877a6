"""Converters into the sharded log format (mdsd_fast.logs): OpenAI-style JSONL pairs and the flat dataset.

* :func:`from_openai_jsonl`: two JSONL files of chat/completions responses with
  ``choices[].logprobs.content[].top_logprobs``, the target model's and the draft model's, scored on
  the same text. The APIs give token *text*, not ids, so positions are aligned by each sampled
  token's bytes (its ``bytes`` field, else its UTF-8 text) and tokens get ids in order of first
  appearance; a position whose tokens differ between the two files is refused with the file, line
  and position named. Every row is truncated (a top-k log); the sampled token's own logprob is
  logged too. ``-inf`` and the APIs' ``-9999`` stand for probability 0 and are dropped.
* :func:`from_dataset`: the package's flat dataset (``load_dataset()``); its rows are complete
  (at most 1e-6 of mass left out) and keep their stored float32 values exactly.

``mdsd-fast convert openai|dataset ...`` runs them from the command line (:func:`add_convert_parser`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..data import LMDataset, SparseChunk, load_dataset
from .manifest import log_state
from .writer import LogWriter, check_new_log

__all__ = ["from_openai_jsonl", "from_dataset", "ZERO_LOGPROB"]

#: Logprobs at or below this are probability 0 (the OpenAI API writes -9999.0 for -inf).
ZERO_LOGPROB = -9999.0

#: Rows converted per block (memory is bounded by it, not by the file).
BLOCK_ROWS = 4096


def _token_key(entry: Any, where: str, j: int | None = None) -> bytes:
    """A token's identity: its ``bytes`` (the API's exact bytes), else its text as UTF-8."""
    try:
        b = entry.get("bytes")
        if b is not None:
            return bytes(b)  # raises for anything but a list of integers in [0, 256)
        return entry["token"].encode("utf-8")  # type: ignore[no-any-return]
    except (AttributeError, KeyError, TypeError, ValueError):
        at = where if j is None else f"{where} top_logprobs[{j}]"
        raise ValueError(f"{at}: expected an object with 'token' (a string) or 'bytes' (integers < 256)") from None


def _logprob(entry: dict[str, Any], where: str) -> float:
    lp = entry.get("logprob")
    if type(lp) is float and lp <= 1e-6:  # the common case (NaN fails the comparison)
        return min(lp, 0.0)
    if isinstance(lp, str) and lp in ("-inf", "-Infinity"):
        return -math.inf
    if isinstance(lp, bool) or not isinstance(lp, (int, float)) or math.isnan(lp) or lp > 1e-6:
        raise ValueError(f"{where}: logprob must be a number <= 0, got {lp!r}")
    return min(float(lp), 0.0)


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any], list[Any]]]:
    """(line number, record, its ``choices``) of every non-blank line of an OpenAI-style JSONL
    file; any line that is not such a response is a ValueError naming ``file:line``."""
    with open(path, "rb") as fh:
        for ln, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{ln}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{ln}: not JSON ({exc.msg})") from None
            except ValueError as exc:  # e.g. an integer of more digits than Python converts
                raise ValueError(f"{path}:{ln}: not JSON ({exc})") from None
            except RecursionError:
                raise ValueError(f"{path}:{ln}: JSON nested too deeply to be a chat/completions response") from None
            choices = rec.get("choices") if isinstance(rec, dict) else None
            if not isinstance(choices, list) or not choices:
                raise ValueError(f"{path}:{ln}: no 'choices' list")
            yield ln, rec, choices


def _positions(path: Path) -> Iterator[tuple[int, int, str, str, list[Any]]]:
    """(line number, choice index, record id, model, logprobs.content) of every choice in a JSONL file."""
    for ln, rec, choices in _records(path):
        for c, ch in enumerate(choices):
            content = ((ch or {}).get("logprobs") or {}).get("content") if isinstance(ch, dict) else None
            if not isinstance(content, list):
                raise ValueError(f"{path}:{ln}: choice {c} has no logprobs.content list (request logprobs)")
            yield ln, c, str(rec.get("id", f"line{ln}")), str(rec.get("model", "")), content


def _logged(pos: dict[str, Any], where: str, vocab: _Vocab) -> tuple[bytes, dict[int, float]]:
    """(sampled token's key, {token id: logprob}) of one position: its top_logprobs and the token itself."""
    key = _token_key(pos, where)
    tops = pos.get("top_logprobs")
    if not isinstance(tops, list):
        raise ValueError(f"{where}: no top_logprobs list (request top_logprobs)")
    out: dict[int, float] = {}
    for j, e in enumerate(tops):
        k = _token_key(e, where, j)
        i = vocab.id_of(k, where)
        if i in out:
            raise ValueError(
                f"{where}: token {k!r} listed twice in top_logprobs (tokens with the same bytes cannot be told apart)"
            )
        out[i] = _logprob(e, where)
    i = vocab.id_of(key, where)
    lp = _logprob(pos, where)
    if i in out and abs(out[i] - lp) > 1e-4 and max(out[i], lp) > ZERO_LOGPROB:
        raise ValueError(f"{where}: the sampled token's logprob {lp} differs from its top_logprobs entry {out[i]}")
    out.setdefault(i, lp)
    return key, out


def from_openai_jsonl(
    target: str | os.PathLike[str],
    draft: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    vocab_size: int,
    model: str | None = None,
    draft_name: str | None = None,
    temperature: float = math.nan,
    domain: str = "",
    rows_per_shard: int = 100_000,
    resume: bool = False,
) -> Path:
    """Convert a (target, draft) pair of OpenAI-style JSONL files into a log directory; returns its path.

    Line i of ``draft`` must score the same text as line i of ``target`` (same choices, same sampled
    tokens at every position). ``vocab_size`` is the models' vocabulary size (the ids written are
    first-appearance indices of the token bytes, so at most that many distinct tokens may appear);
    ``model`` and ``draft_name`` default to each file's ``model`` field; ``temperature`` and ``domain``
    are recorded as given; prompt_id is the target record's ``id`` (``/choice`` when there are several).
    ``resume``: continue an unfinished log in ``out_dir`` (the files are read again from the start, the
    rows its shards hold are skipped; give the same files and options)."""
    tpath, dpath = Path(target), Path(draft)
    _check_out(out_dir, resume)
    for p in (tpath, dpath):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such JSONL file")
    vocab = _Vocab(vocab_size)
    rows: list[tuple[dict[int, float], dict[int, float], dict[str, Any], tuple[str, str]]] = []
    info = dict(source="openai-jsonl")
    with LogWriter(out_dir, vocab_size, rows_per_shard=rows_per_shard, info=info, resume=resume) as w:
        skip = w.resumed_rows  # rows already written: read again (for the token ids), not written
        dit = _positions(dpath)
        for ln, c, rid, tmodel, tcontent in _positions(tpath):
            try:
                dln, dc, _, dmodel, dcontent = next(dit)
            except StopIteration:
                raise ValueError(f"{dpath}: ends before {tpath}:{ln} (the files must score the same texts)") from None
            if len(dcontent) != len(tcontent) or dc != c:
                raise ValueError(
                    f"{tpath}:{ln} and {dpath}:{dln}: choice {c} has {len(tcontent)} positions in the target and "
                    f"{len(dcontent)} in the draft (the files must score the same texts)"
                )
            for j, (tp, dp) in enumerate(zip(tcontent, dcontent, strict=True)):
                where = (f"{tpath}:{ln} choice {c} position {j}", f"{dpath}:{dln} choice {c} position {j}")
                tk, tl = _logged(tp, where[0], vocab)
                dk, dl = _logged(dp, where[1], vocab)
                if tk != dk:
                    raise ValueError(
                        f"{tpath}:{ln} and {dpath}:{dln}: choice {c} position {j}: the target scored token {tk!r} "
                        f"and the draft {dk!r} (the files must score the same text)"
                    )
                meta = dict(
                    model=model or tmodel,
                    draft=draft_name or dmodel,
                    prompt_id=rid if c == 0 else f"{rid}/{c}",
                    position=j,
                )
                if skip:
                    skip -= 1
                    continue
                rows.append((tl, dl, meta, where))
                if len(rows) >= BLOCK_ROWS:
                    _flush(w, rows, temperature, domain)
        try:
            dln, *_ = next(dit)
            raise ValueError(f"{dpath}:{dln}: the draft file has more records than {tpath}")
        except StopIteration:
            pass
        _flush(w, rows, temperature, domain)
    return Path(out_dir)


class _Vocab(dict[bytes, int]):
    """Token bytes -> id in order of first appearance, refusing more than ``vocab_size`` tokens."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.limit = vocab_size

    def id_of(self, key: bytes, where: str) -> int:
        i = self.setdefault(key, len(self))
        if i >= self.limit:
            raise ValueError(
                f"{where}: token {key!r} is distinct token number {i + 1} of the files, more than "
                f"vocab_size = {self.limit}"
            )
        return i


def _flush(w: LogWriter, rows: list[Any], temperature: float, domain: str) -> None:
    if not rows:
        return
    sides = []
    for side in (0, 1):
        lens = [len(r[side]) for r in rows]
        ids = np.fromiter((i for r in rows for i in r[side]), np.int64, sum(lens))
        lp = np.fromiter((x for r in rows for x in r[side].values()), np.float64, sum(lens))
        with np.errstate(under="ignore"):
            prob = np.where(lp <= ZERO_LOGPROB, 0.0, np.exp(lp))
        sides.append((np.concatenate(([0], np.cumsum(lens))), ids, prob))
    meta: dict[str, Any] = {k: [r[2][k] for r in rows] for k in ("model", "draft", "prompt_id", "position")}
    meta.update(temperature=np.full(len(rows), temperature), domain=[domain] * len(rows))
    try:
        w.write(sides[0], sides[1], p_complete=False, q_complete=False, meta=meta)
    except ValueError as exc:  # the writer names a row of the block: name its file, line and position
        m = re.match(r"([pq]): row (\d+) (?:has )?(.*)", str(exc))
        if m is None:
            raise
        raise ValueError(f"{rows[int(m[2])][3][m[1] == 'q']}: {m[3]}") from None
    rows.clear()


def _chunk_sides(ch: SparseChunk) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The chunk's p and q as CSR parts on each one's own positive entries (the stored values)."""
    out = []
    for vals in (ch.p, ch.q):
        keep = vals > 0
        row = np.repeat(np.arange(len(ch)), np.diff(ch.offsets))
        ptr = np.concatenate(([0], np.cumsum(np.bincount(row[keep], minlength=len(ch)))))
        out.append((ptr, ch.token_ids[keep], vals[keep]))
    return out[0], out[1]


def from_dataset(
    dataset: LMDataset | str | os.PathLike[str] | None,
    out_dir: str | os.PathLike[str],
    *,
    model: str | None = None,
    rows_per_shard: int = 100_000,
    entries_per_shard: int = 8_000_000,
    resume: bool = False,
) -> Path:
    """Convert a flat dataset (an :class:`LMDataset`, a dataset file, or None for the shipped one) into
    a log directory; rows are complete, values float32 as stored, row ids the dataset's row numbers.
    ``model`` defaults to the dataset's ``info["target"]``. ``resume``: continue an unfinished log in
    ``out_dir``, skipping the rows its shards hold (give the same dataset and options)."""
    _check_out(out_dir, resume)  # before loading: the shipped dataset takes seconds to decode
    ds = dataset if isinstance(dataset, LMDataset) else load_dataset(dataset)
    name = model or str(ds.info.get("target", ""))
    info = dict(source="mdsd_fast.lmdist", dataset_info=ds.info)
    kw: dict[str, Any] = dict(rows_per_shard=rows_per_shard, entries_per_shard=entries_per_shard, info=info)
    with LogWriter(out_dir, ds.vocab_size, resume=resume, **kw) as w:
        skip = w.resumed_rows
        for ch in ds.iter_chunks(256, sparse=True):
            assert isinstance(ch, SparseChunk)
            if skip >= len(ch):
                skip -= len(ch)
                continue
            p, q = (_from_row(side, skip) for side in _chunk_sides(ch))
            rest = ch.meta[skip:]
            cols = {k: [m[k] for m in rest] for k in ("draft", "temperature", "prompt_id", "position", "domain")}
            meta: dict[str, Any] = dict(cols, model=[name] * len(rest), row_id=[m["row"] for m in rest])
            w.write(p, q, p_complete=True, q_complete=True, meta=meta)
            skip = 0
    return Path(out_dir)


def _from_row(side: tuple[Any, ...], r: int) -> tuple[Any, ...]:
    """CSR parts (ptr, ids, values) without their first ``r`` rows."""
    ptr, ids, val = side
    return ptr[r:] - ptr[r], ids[ptr[r] :], val[ptr[r] :]


def _check_out(out_dir: str | os.PathLike[str], resume: bool) -> None:
    """Refuse ``out_dir`` before any work if it holds a log (or an unfinished one, unless resuming)."""
    if not (resume and log_state(out_dir) == "unfinished"):
        check_new_log(out_dir)
