"""Reading served logs into tallies, one independent unit at a time (a byte segment of a JSONL file,
a shard of a log directory), so units run in any order, in any process, and merge exactly.

A JSONL line is one response: ``choices[c].logprobs.content[j]`` holds the emitted token
(``token``, ``bytes``, ``logprob``) and ``top_logprobs`` of the distribution it was sampled from.
Tokens are matched by their bytes (the ``bytes`` field, else the UTF-8 of ``token``), as
``mdsd-fast convert`` matches them; entries with the same bytes are one outcome. A log directory
(docs/guide/logs.md) is a served log when each row's ``q`` is the emitted token alone (one entry,
probability 1, complete) and ``p`` is the logged distribution.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..inputs.rules import SUM_TOL
from ..logs.convert import ZERO_LOGPROB, _logprob, _token_key
from .stats import Tally

#: Bytes per JSONL unit (a unit ends at the first line end after this many bytes).
SEGMENT_BYTES = 8 << 20
#: Positions per block folded into a tally (memory is bounded by it).
BLOCK = 4096
#: A logged token's logprob and its top_logprobs entry may differ by this much (API rounding).
LOGPROB_TOL = 1e-3


def segments(path: Path, size: int | None = None) -> list[tuple[int, int]]:
    """Byte ranges [start, stop) of ``path`` of about ``size`` bytes (default SEGMENT_BYTES), each
    starting at a line start."""
    size = SEGMENT_BYTES if size is None else size
    total = path.stat().st_size
    starts = [0]
    with open(path, "rb") as fh:
        while starts[-1] + size < total:
            fh.seek(starts[-1] + size)
            fh.readline()
            nxt = fh.tell()
            if nxt >= total:
                break
            starts.append(nxt)
    return list(zip(starts, [*starts[1:], total], strict=True))


def _line_number(path: Path, offset: int) -> int:
    with open(path, "rb") as fh:
        return fh.read(offset).count(b"\n") + 1


class _Block:
    """Positions parsed but not yet folded into the tally."""

    def __init__(self) -> None:
        self.before: list[float] = []
        self.mass: list[float] = []
        self.rank: list[int] = []
        self.sorted: list[list[float]] = []
        self.tail: list[float] = []
        self.position: list[int] = []
        self.temperature: list[float] = []

    def __len__(self) -> int:
        return len(self.before)

    def flush(self, tally: Tally, rng: np.random.Generator) -> None:
        n = len(self)
        if not n:
            return
        k = max((len(s) for s in self.sorted), default=0)
        sm = np.zeros((n, k))
        for i, s in enumerate(self.sorted):
            sm[i, : len(s)] = s
        before, mass = np.asarray(self.before), np.asarray(self.mass)
        u = np.minimum(before + rng.random(n) * mass, np.nextafter(1.0, 0.0))
        tally.add(
            u,
            np.asarray(self.rank, np.int64),
            sm,
            np.asarray(self.tail),
            np.asarray(self.position, np.int64),
            np.asarray(self.temperature),
        )
        self.__init__()  # type: ignore[misc]


def _temperature(rec: dict[str, Any]) -> float:
    for src in (rec, rec.get("request") if isinstance(rec.get("request"), dict) else {}):
        t = src.get("temperature") if isinstance(src, dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            return float(t)
    return math.nan


def _position(pos: Any, where: str, block: _Block, tally: Tally, j: int, temp: float) -> None:
    if not isinstance(pos, dict):
        raise ValueError(f"{where}: expected an object with token, logprob and top_logprobs")
    key = _token_key(pos, where)
    tops = pos.get("top_logprobs")
    if not isinstance(tops, list):
        raise ValueError(f"{where}: no top_logprobs list (request top_logprobs)")
    logged: dict[bytes, float] = {}
    exp = math.exp
    for i, e in enumerate(tops):
        try:  # the common case inline; anything else goes through the converters' checks
            lp, b = e["logprob"], e.get("bytes")
            k = e["token"].encode("utf-8") if b is None else bytes(b)
            if type(lp) is not float or not ZERO_LOGPROB < lp <= 0.0:
                raise TypeError
        except (AttributeError, KeyError, TypeError, ValueError):
            if not isinstance(e, dict):
                raise ValueError(f"{where} top_logprobs[{i}]: expected an object with token and logprob") from None
            lp = _logprob(e, f"{where} top_logprobs[{i}]")
            k = _token_key(e, where, i)
        logged[k] = logged.get(k, 0.0) + (0.0 if lp <= ZERO_LOGPROB else exp(lp))
    total = math.fsum(logged.values())
    if total > 1.0 + SUM_TOL:
        raise ValueError(f"{where}: the top_logprobs probabilities sum to {total:.6g} > 1")
    scale = 1.0 / total if total > 1.0 else 1.0
    tail = max(0.0, 1.0 - total * scale)
    own = _logprob(pos, where)
    own_p = 0.0 if own <= ZERO_LOGPROB else math.exp(own)
    f = logged.get(key)
    if f is None:  # the tail: one outcome after every logged one
        if own_p > tail + LOGPROB_TOL:
            tally.inconsistent += 1
        if tail <= 0.0:
            tally.impossible += 1
            return
        before, mass, rank = total * scale, tail, len(logged)
    else:
        if abs(own_p - f) > LOGPROB_TOL * max(f, 1e-12) and abs(own - math.log(max(f, 1e-300))) > LOGPROB_TOL:
            tally.inconsistent += 1
        if f <= 0.0:
            tally.impossible += 1
            return
        # the order is (probability, bytes), never "the emitted one first"
        ahead = [v for k, v in logged.items() if v > f or (v == f and k < key)]
        before, mass, rank = math.fsum(ahead) * scale, f * scale, len(ahead)
    block.before.append(before)
    block.mass.append(mass)
    block.rank.append(rank)
    block.sorted.append(sorted((v * scale for v in logged.values()), reverse=True))
    block.tail.append(tail)
    block.position.append(j)
    block.temperature.append(temp)


def jsonl_unit(path: str, start: int, stop: int, seed: tuple[int, ...]) -> Tally:
    """The tally of the lines that start in [start, stop) of a JSONL file (one worker's unit)."""
    p = Path(path)
    tally, block = Tally(), _Block()
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    with open(p, "rb") as fh:
        fh.seek(start)
        offset = start
        while offset < stop:
            raw = fh.readline()
            if not raw:
                break
            here, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                try:
                    rec = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise ValueError(f"not JSON ({exc})") from None
                choices = rec.get("choices") if isinstance(rec, dict) else None
                if not isinstance(choices, list) or not choices:
                    raise ValueError("no 'choices' list")
                temp = _temperature(rec)
                for c, ch in enumerate(choices):
                    lp = ch.get("logprobs") if isinstance(ch, dict) else None
                    content = lp.get("content") if isinstance(lp, dict) else None
                    if not isinstance(content, list):
                        raise ValueError(f"choice {c} has no logprobs.content list (request logprobs)")
                    for j, pos in enumerate(content):
                        _position(pos, f"choice {c} position {j}", block, tally, j, temp)
                        if len(block) >= BLOCK:
                            block.flush(tally, rng)
            except ValueError as exc:
                raise ValueError(f"{p}:{_line_number(p, here)}: {exc}") from None
    block.flush(tally, rng)
    return tally


def log_unit(path: str, shard: int, seed: tuple[int, ...]) -> Tally:
    """The tally of one shard of a log directory in the package's log format."""
    from ..logs import open_logs

    logs = open_logs(path)
    tally = Tally()
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    for chunk in logs.iter_chunks(BLOCK, shards=[shard]):
        qn = np.diff(chunk.ptr["q"])
        bad = (qn != 1) | ~chunk.complete["q"]
        if bad.any():
            r = int(np.argmax(bad))
            raise ValueError(
                f"{chunk.shard}: row_id {int(chunk.row_id[r])} is not a served row (q must be the emitted "
                "token alone, probability 1, complete; write served logs with mdsd_fast.served.to_log)"
            )
        _fold_rows(chunk, tally, rng)
    return tally


def _fold_rows(chunk: Any, tally: Tally, rng: np.random.Generator) -> None:
    ptr, ids, probs = chunk.ptr["p"], chunk.ids["p"], chunk.probs["p"].astype(np.float64)
    n = len(chunk)
    counts = np.diff(ptr)
    row = np.repeat(np.arange(n), counts)
    emitted = chunk.ids["q"]
    total = np.bincount(row, weights=probs, minlength=n)
    scale = np.where(total > 1.0, 1.0 / np.maximum(total, 1e-300), 1.0)
    tail = np.where(chunk.complete["p"], 0.0, np.maximum(0.0, 1.0 - total * scale))
    order = np.lexsort((ids, -probs, row))  # within a row: probability down, then id
    sp, sid = probs[order] * scale[row], ids[order]
    col = np.arange(ids.size) - ptr[:-1][row]
    k = max(1, int(counts.max()) if n else 1)
    sm = np.zeros((n, k))
    sm[row, col] = sp
    hit = sid == emitted[row]
    found = np.bincount(row, weights=hit, minlength=n) > 0
    rank = np.full(n, k, np.int64)
    rank[row[hit]] = col[hit]
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(sm, axis=1)], axis=1)
    before = np.where(found, cum[np.arange(n), np.minimum(rank, k)], total * scale)
    mass = np.where(found, sm[np.arange(n), np.minimum(rank, k - 1)], tail)
    ok = mass > 0
    tally.impossible += int((~ok).sum())
    u = np.minimum(before + rng.random(n) * mass, np.nextafter(1.0, 0.0))
    pos = chunk.meta["position"].astype(np.int64)
    tally.add(u[ok], rank[ok], sm[ok], tail[ok], np.maximum(pos[ok], 0), chunk.meta["temperature"][ok])


def describe(path: str | os.PathLike[str]) -> tuple[str, Path]:
    """("jsonl" or "logs", resolved path) of a served log; a ValueError naming it otherwise."""
    p = Path(path)
    if p.is_dir():
        from ..logs import MANIFEST

        if not (p / MANIFEST).is_file():
            raise ValueError(f"{p}: a directory without {MANIFEST} (not a log directory)")
        return "logs", p.resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file or directory")
    return "jsonl", p.resolve()
