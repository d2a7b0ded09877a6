"""The stored format of a dataset: an ``.npz`` archive of LZMA-compressed members, no pickles.

:func:`encode` turns a dataset's compact arrays (``_layout.compact``) into the archive's members,
:func:`load` reads them back as :class:`~mdsd_fast.data.LMDataset`'s constructor arguments and
turns any damage into a ValueError naming the file. Values are stored in fixed point (integer
multiples of ``2**-e``, ``e`` per distribution, as byte planes the compressor likes) or as
float32 / float64; token ids as uint16 gaps when ``V <= 65,536``. The members are listed in
docs/guide/data.md; ``mdsd_fast.trees.data`` stores its trees with the same value encoding.
"""

from __future__ import annotations

import json
import lzma
import os
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from .._files import atomic_write

FORMAT = "mdsd_fast.lmdist"
FORMAT_VERSION = 1
#: largest mass a stored distribution may leave out
MAX_TRUNCATION = 1e-6
#: largest L1 error of the "fixed" value encoding per stored distribution
MAX_QUANT_L1 = 1e-6
ENCODINGS = ("fixed", "float32", "float64")

_T = TypeVar("_T")


def write_npz(path: str | os.PathLike[str], arrays: dict[str, Any]) -> Path:
    """Write ``arrays`` as an LZMA-compressed .npz (no pickles), atomically: a .tmp file, then a rename."""
    path = Path(path)

    def members(out: IO[bytes]) -> None:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_LZMA) as zf:
            for name, arr in arrays.items():
                with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asarray(arr), allow_pickle=False)

    return atomic_write(path, members)


def encode(a: dict[str, Any], encoding: str, max_quant_l1: float) -> dict[str, Any]:
    """The archive's members for the compact arrays ``a`` of a dataset; the quantisation error of
    the encoding is added to the recorded ``p_quant`` / ``q_quant`` (``a`` is not modified)."""
    V = int(a["vocab_size"])
    C = a["ctx_offsets"].size - 1
    lens = np.diff(a["ctx_offsets"]).astype(np.int64)
    arrays: dict[str, Any] = {
        "format": np.array(FORMAT),
        "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
        "vocab_size": np.array(V, dtype=np.int64),
        "encoding": np.array(encoding),
        "ctx_lengths": lens.astype(np.int32),
        "p_trunc": a["p_trunc"].astype(np.float64),
        "row_ctx": a["row_ctx"].astype(np.int32 if C < 2**31 else np.int64),
        "row_draft": a["row_draft"].astype(np.int16),
        "q_trunc": a["q_trunc"].astype(np.float64),
        "ctx_prompt": a["ctx_prompt"].astype(np.int32),
        "ctx_temperature": a["ctx_temperature"].astype(np.float64),
        "ctx_position": a["ctx_position"].astype(np.int32),
        "ctx_token": a["ctx_token"].astype(np.int32),
        "prompt_ids": a["prompt_ids"],
        "prompt_domains": a["prompt_domains"],
        "draft_names": a["draft_names"],
        "draft_specs": a["draft_specs"],
        "info": np.array(json.dumps(a["info"], sort_keys=True)),
    }
    ids = a["token_ids"].astype(np.int64)
    if V <= 1 << 16:  # ascending ids per context -> gaps (the first gap is the first id)
        starts = a["ctx_offsets"][:-1]
        gaps = ids.copy()
        gaps[1:] -= ids[:-1]
        gaps[starts[lens > 0]] = ids[starts[lens > 0]]
        arrays["token_gaps"] = gaps.astype(np.uint16)
    else:
        arrays["token_ids"] = ids.astype(np.int32)
    q_offsets = np.concatenate([[0], np.cumsum(lens[a["row_ctx"]])]).astype(np.int64)
    p_quant = a["p_quant"].copy()
    q_quant = a["q_quant"].copy()
    for key, vals, offs in (("p", a["p_values"], a["ctx_offsets"]), ("q", a["q_values"], q_offsets)):
        if encoding == "fixed":
            exps, k, l1 = _fixed_encode(np.asarray(vals, dtype=np.float64), offs, max_quant_l1)
            arrays[f"{key}_exp"] = exps.astype(np.int8)
            arrays[f"{key}_planes"] = _to_planes(k)
            (p_quant if key == "p" else q_quant)[:] += l1
        else:
            arrays[f"{key}_values"] = np.asarray(vals).astype(encoding)
            if encoding == "float32" and np.asarray(vals).dtype != np.float32:
                v64 = np.asarray(vals, dtype=np.float64)
                err = np.abs(v64.astype(np.float32).astype(np.float64) - v64)
                (p_quant if key == "p" else q_quant)[:] += (
                    np.add.reduceat(err, offs[:-1]) * (np.diff(offs) > 0) if err.size else 0.0
                )
    arrays["p_quant"] = p_quant
    arrays["q_quant"] = q_quant
    return arrays


def load(path: str | os.PathLike[str], build: Callable[..., _T]) -> _T:
    """``build(**arguments)`` with the arguments stored in ``path``. A missing file is a
    FileNotFoundError; a file that is not such an archive, or a damaged one (including arrays
    ``build`` refuses), a ValueError naming the file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such dataset file")
    if not zipfile.is_zipfile(path):  # numpy would suggest allow_pickle=True for random bytes
        raise ValueError(f"{path}: not a dataset file (expected an .npz archive in the {FORMAT} format)")
    try:
        return build(**_decode(path))
    except (KeyError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError) as exc:
        raise ValueError(f"{path}: damaged dataset file ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        if "allow_pickle" in str(exc):  # numpy's advice to unpickle: never taken for a user's file
            raise ValueError(f"{path}: not a dataset file (it holds Python objects, which are never loaded)") from None
        raise ValueError(f"{path}: damaged dataset file ({exc})") from None


def _decode(path: str | os.PathLike[str]) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as z:
        fmt = str(z["format"]) if "format" in z.files else ""
        if fmt != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} file (format field {fmt!r})")
        version = int(z["format_version"])
        if version > FORMAT_VERSION:
            raise ValueError(f"{path}: format version {version} is newer than this mdsd_fast ({FORMAT_VERSION})")
        encoding = str(z["encoding"])
        lens = z["ctx_lengths"].astype(np.int64)
        ctx_offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        row_ctx = z["row_ctx"].astype(np.int64)
        if "token_gaps" in z.files:
            g = z["token_gaps"].astype(np.int64)
            cs = np.cumsum(g)
            base = np.concatenate([[0], cs])[ctx_offsets[:-1]]
            token_ids = cs - np.repeat(base, lens)
        else:
            token_ids = z["token_ids"].astype(np.int64)
        q_offsets = np.concatenate([[0], np.cumsum(lens[row_ctx])]).astype(np.int64)
        vals = {}
        for key, offs in (("p", ctx_offsets), ("q", q_offsets)):
            if encoding == "fixed":
                vals[key] = _fixed_decode(z[f"{key}_planes"], z[f"{key}_exp"].astype(np.int64), offs)
            else:
                vals[key] = z[f"{key}_values"]
        return dict(
            vocab_size=int(z["vocab_size"]),
            ctx_offsets=ctx_offsets,
            token_ids=token_ids,
            p_values=vals["p"],
            p_trunc=z["p_trunc"],
            row_ctx=row_ctx,
            row_draft=z["row_draft"].astype(np.int64),
            q_values=vals["q"],
            q_trunc=z["q_trunc"],
            ctx_prompt=z["ctx_prompt"].astype(np.int64),
            ctx_temperature=z["ctx_temperature"],
            ctx_position=z["ctx_position"].astype(np.int64),
            ctx_token=z["ctx_token"].astype(np.int64),
            prompt_ids=z["prompt_ids"].tolist(),
            prompt_domains=z["prompt_domains"].tolist(),
            draft_names=z["draft_names"].tolist(),
            draft_specs=z["draft_specs"].tolist(),
            info=json.loads(str(z["info"])),
            p_quant=z["p_quant"],
            q_quant=z["q_quant"],
        )


def _fixed_encode(
    values: NDArray[np.float64], offsets: NDArray[np.int64], max_l1: float
) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.float64]]:
    """Per segment, integers k with k * 2**-e ~ values, e the smallest in [24, 60] whose L1 error
    is <= max_l1; the rounding residual of the segment sum goes to its largest entry, so the
    stored sum equals the exact sum to within 2**-e / 2."""
    nseg = offsets.size - 1
    exps = np.zeros(nseg, dtype=np.int64)
    l1 = np.zeros(nseg)
    k_all = np.zeros(values.size, dtype=np.uint64)
    for s in range(nseg):
        a, b = int(offsets[s]), int(offsets[s + 1])
        v = values[a:b]
        if v.size == 0:
            exps[s] = 0
            continue
        top = int(np.argmax(v))
        for e in range(24, 61):
            k = np.rint(np.ldexp(v, e))
            k[top] += np.rint(np.ldexp(v.sum(), e)) - k.sum()
            err = float(np.abs(np.ldexp(k, -e) - v).sum())
            if err <= max_l1 or e == 60:
                break
        exps[s], l1[s] = e, err
        k_all[a:b] = k.astype(np.uint64)
    return exps, k_all, l1


def _to_planes(k: NDArray[np.uint64]) -> NDArray[np.uint8]:
    """(nbytes, N) little-endian byte planes of k (byte-shuffling helps the compressor)."""
    nb = max(1, (int(k.max()).bit_length() + 7) // 8) if k.size else 1
    return np.ascontiguousarray(k.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :nb].T)


def _fixed_decode(
    planes: NDArray[np.uint8], exps: NDArray[np.int64], offsets: NDArray[np.int64]
) -> NDArray[np.float32]:
    k = np.zeros(planes.shape[1], dtype=np.uint64)
    for b in range(planes.shape[0]):
        k |= planes[b].astype(np.uint64) << np.uint64(8 * b)
    e = np.repeat(exps, np.diff(offsets))
    return np.ldexp(k.astype(np.float64), -e).astype(np.float32)
