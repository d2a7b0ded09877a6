"""Next-token distribution datasets: the stored format, the loader and chunked iteration.

A dataset is a list of *rows*. Each row is one pair ``(p, q)`` of next-token distributions over a
vocabulary of ``V`` tokens: ``p`` from the target model, ``q`` from one draft construction, both for
the same prefix and at the same temperature. Several drafts can share a prefix (a *context*); the
target distribution and the token list are then stored once for all of them.

The on-disk format (``.npz`` with LZMA-compressed members, readable with ``numpy.load`` alone; see
docs/DATA.md) stores per context only the tokens that carry the mass of ``p`` or of any ``q`` of
that context: for each distribution the smallest set of most probable tokens holding at least
``1 - 1e-6`` of its mass, and the union of those sets. The mass left out (the *truncation*) is
recorded per distribution and is at most 1e-6. Token ids are stored as uint16 gaps. Probabilities
are stored in fixed point (integer multiples of ``2**-e``, ``e`` per distribution) with an L1 error
of at most 1e-6 per distribution, also recorded; the stored sums are exact. At T = 1 a 49k-token
distribution needs ~30,000 tokens to reach ``1 - 1e-6``, which is why the values are compressed
this way (float32 would take ~3x the space).

Only NumPy is needed here; ``torch`` is never imported.

>>> ds = load_dataset()                                     # the shipped SmolLM2-135M dataset
>>> mild = ds.select(draft="skip2", temperature=0.7)        # a view; nothing is copied
>>> p, q = mild.dense(np.float64)                           # dense (B, 49152) arrays
>>> for chunk in ds.iter_chunks(256, sparse=True):          # compact chunks for large files
...     pc, qc = chunk.padded()                             # (b, L) on each row's own support
"""

from __future__ import annotations

import json
import lzma
import os
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "DEFAULT_DATASET_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_QUANT_L1",
    "MAX_TRUNCATION",
    "SHIPPED_MODELS",
    "DatasetBuilder",
    "DenseChunk",
    "LMDataset",
    "SparseChunk",
    "default_dataset_path",
    "from_arrays",
    "load_dataset",
    "top_mass_tokens",
]

FORMAT = "mdsd_fast.lmdist"
FORMAT_VERSION = 1
#: largest mass a stored distribution may leave out
MAX_TRUNCATION = 1e-6
#: largest L1 error of the "fixed" value encoding per stored distribution
MAX_QUANT_L1 = 1e-6
DEFAULT_DATASET_FILE = "smollm2_135m.npz"
#: model name -> file of its shipped data in mdsd_fast/data (the first is the default)
SHIPPED_MODELS: dict[str, str] = {"smollm2-135m": DEFAULT_DATASET_FILE, "gemma3-270m": "gemma3_270m.npz"}

# Row fields available through LMDataset.column() and in every .meta record.
_ROW_FIELDS = (
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


def shipped_model(model: str | None) -> str:
    """The key of :data:`SHIPPED_MODELS` for ``model`` (None: the default, SmolLM2-135M)."""
    if model is None:
        return next(iter(SHIPPED_MODELS))
    if not isinstance(model, str) or model not in SHIPPED_MODELS:
        raise ValueError(f"model: expected one of {', '.join(SHIPPED_MODELS)}, got {model!r}")
    return model


def default_dataset_path(model: str | None = None) -> Path:
    """Path of the dataset shipped inside the package for ``model`` (default: SmolLM2-135M)."""
    return Path(__file__).resolve().parent / "data" / SHIPPED_MODELS[shipped_model(model)]


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


def _as_str_array(values: Sequence[str]) -> NDArray[np.str_]:
    arr = np.asarray(list(values), dtype=str)
    if arr.size == 0:
        arr = np.zeros(0, dtype="<U1")
    return arr


def _match(values: NDArray[Any], wanted: Any, *, numeric: bool = False) -> NDArray[np.bool_]:
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


def write_npz(path: str | os.PathLike[str], arrays: dict[str, Any]) -> Path:
    """Write ``arrays`` as an LZMA-compressed .npz (no pickles), atomically: a .tmp file, then a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_LZMA) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asarray(arr), allow_pickle=False)
    os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class DenseChunk:
    """A block of consecutive rows as dense ``(b, V)`` arrays."""

    p: NDArray[np.floating[Any]]
    q: NDArray[np.floating[Any]]
    rows: NDArray[np.int64]  #: row numbers within the dataset (view) iterated over
    meta: list[dict[str, Any]]


@dataclass(frozen=True)
class SparseChunk:
    """A block of rows in compressed sparse row form, on each row's stored token support.

    Row ``i`` has tokens ``token_ids[offsets[i]:offsets[i+1]]`` (ascending) with target
    probabilities ``p[...]`` and draft probabilities ``q[...]`` on the same slice; every token not
    listed has ``p = q = 0`` in the stored data.
    """

    offsets: NDArray[np.int64]
    token_ids: NDArray[np.int64]
    p: NDArray[np.floating[Any]]
    q: NDArray[np.floating[Any]]
    vocab_size: int
    rows: NDArray[np.int64]
    meta: list[dict[str, Any]]

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def row(self, i: int) -> tuple[NDArray[np.int64], NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
        """``(token_ids, p, q)`` of row ``i`` of the chunk."""
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.token_ids[a:b], self.p[a:b], self.q[a:b]

    def padded(self, dtype: Any = np.float64) -> tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
        """``(p, q)`` of shape ``(b, L)``: each row on its own support (ascending ids), zero-padded.

        ``L`` is the largest support in the chunk. Relabelling tokens in ascending id order and
        appending zero-probability tokens at the end leaves sum min(p, q) and alpha* of the
        ``iid``, ``wor`` and ``greedy`` schemes unchanged (greedy breaks ties toward the lower id,
        which the relabelling preserves), so these arrays can be fed to
        :func:`mdsd_fast.optimal_acceptance` directly and are much smaller than ``(b, V)``.
        """
        lens = np.diff(self.offsets)
        width = int(lens.max()) if lens.size else 0
        p = np.zeros((lens.size, width), dtype=dtype)
        q = np.zeros((lens.size, width), dtype=dtype)
        for i in range(lens.size):
            a, b = int(self.offsets[i]), int(self.offsets[i + 1])
            p[i, : b - a] = self.p[a:b]
            q[i, : b - a] = self.q[a:b]
        return p, q

    def dense(self, dtype: Any = np.float64) -> tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
        """``(p, q)`` of shape ``(b, V)``."""
        b = len(self)
        p = np.zeros((b, self.vocab_size), dtype=dtype)
        q = np.zeros((b, self.vocab_size), dtype=dtype)
        for i in range(b):
            t, pv, qv = self.row(i)
            p[i, t] = pv
            q[i, t] = qv
        return p, q


class LMDataset:
    """Rows of (target p, draft q) next-token distributions with metadata.

    Get one with :func:`load_dataset` (a stored file), :func:`from_arrays` (your own dense
    arrays) or the extractor :func:`mdsd_fast.lm.extract`. Selections (:meth:`select`) are views
    sharing the stored arrays.

    Dense access: :attr:`p` and :attr:`q` are ``(B, V)`` arrays in the *storage* dtype (float32
    for stored files: the shipped file has ~1,500 rows of V = 49,152, so float64 would take
    ~600 MB per array); they are built on first access and cached. :meth:`dense` builds them in
    any dtype without caching. For large files iterate with :meth:`iter_chunks`.

    Stored rows are *not* renormalised: row ``r`` of ``p`` sums to ``1 - p_truncation[r]`` (up to
    float32 rounding, ~1e-7), likewise for ``q``; pass ``renormalize=True`` to :meth:`dense` or
    :meth:`iter_chunks` to divide by the row sums. :func:`mdsd_fast.optimal_acceptance` accepts
    either (it renormalises rows within 1e-4 of 1).
    """

    #: (rows it was built for, their metadata); set on first use by ``_meta_rows``.
    _meta_cache: tuple[NDArray[np.int64], list[dict[str, Any]]]

    def __init__(
        self,
        *,
        vocab_size: int,
        ctx_offsets: NDArray[np.int64],
        token_ids: NDArray[Any],
        p_values: NDArray[np.floating[Any]],
        p_trunc: NDArray[np.float64],
        row_ctx: NDArray[np.int64],
        row_draft: NDArray[np.int64],
        q_values: NDArray[np.floating[Any]],
        q_trunc: NDArray[np.float64],
        ctx_prompt: NDArray[np.int64],
        ctx_temperature: NDArray[np.float64],
        ctx_position: NDArray[np.int64],
        ctx_token: NDArray[np.int64],
        prompt_ids: Sequence[str],
        prompt_domains: Sequence[str],
        draft_names: Sequence[str],
        draft_specs: Sequence[str] | None = None,
        info: Mapping[str, Any] | None = None,
        rows: NDArray[np.int64] | None = None,
        p_quant: NDArray[np.float64] | None = None,
        q_quant: NDArray[np.float64] | None = None,
    ) -> None:
        self.vocab_size = int(vocab_size)
        self._ctx_offsets = np.asarray(ctx_offsets, dtype=np.int64)
        self._token_ids = np.asarray(token_ids)
        self._p_values = np.asarray(p_values)
        self._p_trunc = np.asarray(p_trunc, dtype=np.float64)
        self._row_ctx = np.asarray(row_ctx, dtype=np.int64)
        self._row_draft = np.asarray(row_draft, dtype=np.int64)
        self._q_values = np.asarray(q_values)
        self._q_trunc = np.asarray(q_trunc, dtype=np.float64)
        self._p_quant = np.zeros(self._p_trunc.shape) if p_quant is None else np.asarray(p_quant, np.float64)
        self._q_quant = np.zeros(self._q_trunc.shape) if q_quant is None else np.asarray(q_quant, np.float64)
        self._ctx_prompt = np.asarray(ctx_prompt, dtype=np.int64)
        self._ctx_temperature = np.asarray(ctx_temperature, dtype=np.float64)
        self._ctx_position = np.asarray(ctx_position, dtype=np.int64)
        self._ctx_token = np.asarray(ctx_token, dtype=np.int64)
        self._prompt_ids = _as_str_array(prompt_ids)
        self._prompt_domains = _as_str_array(prompt_domains)
        self._draft_names = _as_str_array(draft_names)
        specs = list(draft_specs) if draft_specs is not None else ["{}"] * len(self._draft_names)
        self._draft_specs = _as_str_array(specs)
        self.info: dict[str, Any] = dict(info or {})
        lens = np.diff(self._ctx_offsets)
        self._row_qoff = np.concatenate([[0], np.cumsum(lens[self._row_ctx])]).astype(np.int64)
        self._rows = np.arange(self._row_ctx.size, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
        self._dense_cache: tuple[NDArray[Any], NDArray[Any]] | None = None
        self._check()

    # ------------------------------------------------------------------ consistency
    def _check(self) -> None:
        C = self._ctx_offsets.size - 1
        if C < 0 or self._ctx_offsets[0] != 0 or np.any(np.diff(self._ctx_offsets) < 0):
            raise ValueError("ctx_offsets must start at 0 and be non-decreasing")
        N = int(self._ctx_offsets[-1])
        if self._token_ids.shape != (N,) or self._p_values.shape != (N,):
            raise ValueError("token_ids and p_values must have ctx_offsets[-1] entries")
        if N and (self._token_ids.min() < 0 or self._token_ids.max() >= self.vocab_size):
            raise ValueError("token ids out of range [0, vocab_size)")
        for name in ("_p_trunc", "_p_quant", "_ctx_prompt", "_ctx_temperature", "_ctx_position", "_ctx_token"):
            if getattr(self, name).shape != (C,):
                raise ValueError(f"{name[1:]} must have one entry per context ({C})")
        B = self._row_ctx.size
        if self._row_draft.shape != (B,) or self._q_trunc.shape != (B,) or self._q_quant.shape != (B,):
            raise ValueError("row_draft and q_trunc must have one entry per row")
        if B and (self._row_ctx.min() < 0 or self._row_ctx.max() >= C):
            raise ValueError("row_ctx out of range")
        if B and (self._row_draft.min() < 0 or self._row_draft.max() >= len(self._draft_names)):
            raise ValueError("row_draft out of range")
        if self._q_values.shape != (int(self._row_qoff[-1]),):
            raise ValueError("q_values must hold one value per (row, context token)")
        if C and (self._ctx_prompt.min() < 0 or self._ctx_prompt.max() >= len(self._prompt_ids)):
            raise ValueError("ctx_prompt out of range")
        if len(self._prompt_domains) != len(self._prompt_ids):
            raise ValueError("prompt_domains and prompt_ids differ in length")

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return int(self._rows.size)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.vocab_size)

    @property
    def dtype(self) -> np.dtype[Any]:
        """Storage dtype of the probabilities (float32 for stored files)."""
        return np.result_type(self._p_values.dtype, self._q_values.dtype)

    def __repr__(self) -> str:
        return (
            f"LMDataset({len(self)} rows, V={self.vocab_size}, drafts={self.drafts}, "
            f"temperatures={self.temperatures}, domains={self.domains})"
        )

    # ------------------------------------------------------------------ metadata
    def column(self, name: str) -> NDArray[Any]:
        """One metadata field for every row, as an array (see :attr:`meta` for the names)."""
        r = self._rows
        ctx = self._row_ctx[r]
        if name == "row":
            return np.arange(r.size, dtype=np.int64)
        if name == "context":
            return ctx.copy()
        if name == "draft":
            return self._draft_names[self._row_draft[r]]
        if name == "draft_spec":
            return self._draft_specs[self._row_draft[r]]
        if name == "temperature":
            return self._ctx_temperature[ctx]
        if name == "domain":
            return self._prompt_domains[self._ctx_prompt[ctx]]
        if name == "prompt_id":
            return self._prompt_ids[self._ctx_prompt[ctx]]
        if name == "position":
            return self._ctx_position[ctx]
        if name == "token":
            return self._ctx_token[ctx]
        if name == "p_truncation":
            return self._p_trunc[ctx]
        if name == "q_truncation":
            return self._q_trunc[r]
        if name == "p_quantization":
            return self._p_quant[ctx]
        if name == "q_quantization":
            return self._q_quant[r]
        if name == "n_tokens":
            return np.diff(self._ctx_offsets)[ctx]
        raise KeyError(f"unknown column {name!r}; known: {', '.join(_ROW_FIELDS + ('draft_spec',))}")

    @property
    def meta(self) -> list[dict[str, Any]]:
        """One record per row: row, context, draft, temperature, domain, prompt_id, position
        (index of the generated token, 0 = first), token (the token the target then sampled, -1 if
        unknown), p_truncation and q_truncation (mass of the tokens not stored), p_quantization and
        q_quantization (L1 distance between the stored values and the model's, from the value
        encoding; 0 when exact), n_tokens (stored support size). Models and draft
        constructions are described in :attr:`info` and :meth:`draft_spec`."""
        cols = {name: self.column(name) for name in _ROW_FIELDS}
        out = []
        for i in range(len(self)):
            rec: dict[str, Any] = {}
            for name in _ROW_FIELDS:
                v = cols[name][i]
                rec[name] = v.item() if hasattr(v, "item") else v
            out.append(rec)
        return out

    def _unique(self, name: str) -> list[Any]:
        seen: dict[Any, None] = {}
        for v in self.column(name).tolist():
            seen.setdefault(v, None)
        return list(seen)

    @property
    def drafts(self) -> list[str]:
        return self._unique("draft")

    @property
    def temperatures(self) -> list[float]:
        return sorted(self._unique("temperature"))

    @property
    def domains(self) -> list[str]:
        return self._unique("domain")

    @property
    def prompt_ids(self) -> list[str]:
        return self._unique("prompt_id")

    def draft_spec(self, name: str) -> dict[str, Any]:
        """How a draft was built (a JSON record: kind, skipped layers, ...)."""
        idx = np.flatnonzero(self._draft_names == name)
        if idx.size == 0:
            raise KeyError(f"unknown draft {name!r}; known: {list(self._draft_names)}")
        return dict(json.loads(str(self._draft_specs[idx[0]])))

    @property
    def p_truncation(self) -> NDArray[np.float64]:
        return self.column("p_truncation")

    @property
    def q_truncation(self) -> NDArray[np.float64]:
        return self.column("q_truncation")

    # ------------------------------------------------------------------ selection
    def _view(self, rows: NDArray[np.int64]) -> LMDataset:
        new = object.__new__(LMDataset)
        new.__dict__.update(self.__dict__)
        new._rows = rows
        new._dense_cache = None
        return new

    def select(
        self,
        *,
        draft: str | Iterable[str] | None = None,
        temperature: float | Iterable[float] | None = None,
        domain: str | Iterable[str] | None = None,
        prompt_id: str | Iterable[str] | None = None,
        rows: ArrayLike | None = None,
    ) -> LMDataset:
        """Rows matching every given filter (each a value or a list of values), as a view."""
        mask = np.ones(len(self), dtype=bool)
        if draft is not None:
            mask &= _match(self.column("draft"), draft)
        if temperature is not None:
            mask &= _match(self.column("temperature"), temperature, numeric=True)
        if domain is not None:
            mask &= _match(self.column("domain"), domain)
        if prompt_id is not None:
            mask &= _match(self.column("prompt_id"), prompt_id)
        sel = np.flatnonzero(mask)
        if rows is not None:
            r = np.asarray(rows)
            if r.dtype == bool:
                r = np.flatnonzero(r)
            sel = np.intersect1d(sel, r.astype(np.int64))
        return self._view(self._rows[sel])

    def __getitem__(self, index: Any) -> LMDataset:
        """``ds[a:b]``, ``ds[[i, j]]`` or ``ds[mask]``: a view of those rows."""
        return self._view(self._rows[np.arange(len(self))[index]].reshape(-1))

    # ------------------------------------------------------------------ values
    def sparse_row(self, i: int) -> tuple[NDArray[np.int64], NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
        """``(token_ids, p, q)`` of row ``i`` on its stored support (ascending ids)."""
        r = int(self._rows[i])
        c = int(self._row_ctx[r])
        a, b = int(self._ctx_offsets[c]), int(self._ctx_offsets[c + 1])
        qa = int(self._row_qoff[r])
        return (
            self._token_ids[a:b].astype(np.int64),
            self._p_values[a:b],
            self._q_values[qa : qa + (b - a)],
        )

    def _sparse(self, rows: NDArray[np.int64]) -> SparseChunk:
        ctx = self._row_ctx[self._rows[rows]]
        lens = np.diff(self._ctx_offsets)[ctx]
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        n = int(offsets[-1])
        t = np.empty(n, dtype=np.int64)
        p = np.empty(n, dtype=self._p_values.dtype)
        q = np.empty(n, dtype=self._q_values.dtype)
        for k, i in enumerate(rows):
            tk, pk, qk = self.sparse_row(int(i))
            t[offsets[k] : offsets[k + 1]] = tk
            p[offsets[k] : offsets[k + 1]] = pk
            q[offsets[k] : offsets[k + 1]] = qk
        meta = self._meta_rows(rows)
        return SparseChunk(offsets, t, p, q, self.vocab_size, np.asarray(rows, np.int64), meta)

    def _meta_rows(self, rows: NDArray[np.int64]) -> list[dict[str, Any]]:
        if not hasattr(self, "_meta_cache") or self._meta_cache[0] is not self._rows:
            self._meta_cache = (self._rows, self.meta)
        m = self._meta_cache[1]
        return [m[int(i)] for i in rows]

    def dense(
        self, dtype: Any = np.float64, *, renormalize: bool = False
    ) -> tuple[NDArray[np.floating[Any]], NDArray[np.floating[Any]]]:
        """``(p, q)`` as dense ``(B, V)`` arrays of ``dtype`` (not cached)."""
        p, q = self._sparse(np.arange(len(self))).dense(dtype)
        if renormalize:
            p /= p.sum(axis=1, keepdims=True)
            q /= q.sum(axis=1, keepdims=True)
        return p, q

    def _dense_cached(self) -> tuple[NDArray[Any], NDArray[Any]]:
        if self._dense_cache is None:
            self._dense_cache = self.dense(self.dtype)
        return self._dense_cache

    @property
    def p(self) -> NDArray[np.floating[Any]]:
        """Target distributions, dense ``(B, V)`` in the storage dtype (cached)."""
        return self._dense_cached()[0]

    @property
    def q(self) -> NDArray[np.floating[Any]]:
        """Draft distributions, dense ``(B, V)`` in the storage dtype (cached)."""
        return self._dense_cached()[1]

    def iter_chunks(
        self, size: int = 256, *, sparse: bool = False, dtype: Any = np.float64, renormalize: bool = False
    ) -> Iterator[DenseChunk | SparseChunk]:
        """Iterate over blocks of at most ``size`` rows.

        ``sparse=False`` yields :class:`DenseChunk` (dense ``(b, V)`` arrays of ``dtype``);
        ``sparse=True`` yields :class:`SparseChunk` (values in the storage dtype; see
        :meth:`SparseChunk.padded` for compact arrays that ``optimal_acceptance`` accepts).
        """
        if size < 1:
            raise ValueError("size must be >= 1")
        for start in range(0, len(self), size):
            rows = np.arange(start, min(start + size, len(self)), dtype=np.int64)
            chunk = self._sparse(rows)
            if sparse:
                yield chunk
                continue
            p, q = chunk.dense(dtype)
            if renormalize:
                p /= p.sum(axis=1, keepdims=True)
                q /= q.sum(axis=1, keepdims=True)
            yield DenseChunk(p, q, rows, chunk.meta)

    def sum_min(self) -> NDArray[np.float64]:
        """Per row sum_x min(p(x), q(x)) (the single-draft acceptance), in float64."""
        out = np.empty(len(self), dtype=np.float64)
        for i in range(len(self)):
            _, p, q = self.sparse_row(i)
            out[i] = np.minimum(p.astype(np.float64), q.astype(np.float64)).sum()
        return out

    def row_sums(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per row (sum of stored p, sum of stored q), in float64."""
        sp = np.empty(len(self))
        sq = np.empty(len(self))
        for i in range(len(self)):
            _, p, q = self.sparse_row(i)
            sp[i] = p.sum(dtype=np.float64)
            sq[i] = q.sum(dtype=np.float64)
        return sp, sq

    def summary(self) -> list[dict[str, Any]]:
        """Per (domain, temperature, draft): row count and mean sum min(p, q)."""
        dom, temp, dr = self.column("domain"), self.column("temperature"), self.column("draft")
        sm = self.sum_min()
        out = []
        for d in self.domains:
            for t in self.temperatures:
                for k in self.drafts:
                    m = (dom == d) & np.isclose(temp, t) & (dr == k)
                    if m.any():
                        out.append(
                            {
                                "domain": d,
                                "temperature": t,
                                "draft": k,
                                "rows": int(m.sum()),
                                "mean_sum_min": float(sm[m].mean()),
                            }
                        )
        return out

    # ------------------------------------------------------------------ storage
    def _compact(self) -> dict[str, Any]:
        """Arrays of the current view with unused contexts, prompts and drafts dropped."""
        rows = self._rows
        ctx_used, row_ctx = np.unique(self._row_ctx[rows], return_inverse=True)
        order = np.argsort(row_ctx, kind="stable")
        rows, row_ctx = rows[order], row_ctx[order]
        lens = np.diff(self._ctx_offsets)[ctx_used]
        ctx_offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        take = (
            np.concatenate([np.arange(self._ctx_offsets[c], self._ctx_offsets[c + 1]) for c in ctx_used])
            if ctx_used.size
            else np.zeros(0, np.int64)
        )
        qtake = (
            np.concatenate([np.arange(self._row_qoff[r], self._row_qoff[r + 1]) for r in rows])
            if rows.size
            else np.zeros(0, np.int64)
        )
        prompts_used, ctx_prompt = np.unique(self._ctx_prompt[ctx_used], return_inverse=True)
        drafts_used, row_draft = np.unique(self._row_draft[rows], return_inverse=True)
        return dict(
            vocab_size=self.vocab_size,
            ctx_offsets=ctx_offsets,
            token_ids=self._token_ids[take.astype(np.int64)],
            p_values=self._p_values[take.astype(np.int64)],
            p_trunc=self._p_trunc[ctx_used],
            p_quant=self._p_quant[ctx_used],
            q_quant=self._q_quant[rows],
            row_ctx=row_ctx.astype(np.int64),
            row_draft=row_draft.astype(np.int64),
            q_values=self._q_values[qtake.astype(np.int64)],
            q_trunc=self._q_trunc[rows],
            ctx_prompt=ctx_prompt.astype(np.int64),
            ctx_temperature=self._ctx_temperature[ctx_used],
            ctx_position=self._ctx_position[ctx_used],
            ctx_token=self._ctx_token[ctx_used],
            prompt_ids=self._prompt_ids[prompts_used],
            prompt_domains=self._prompt_domains[prompts_used],
            draft_names=self._draft_names[drafts_used],
            draft_specs=self._draft_specs[drafts_used],
            info=self.info,
        )

    def save(
        self, path: str | os.PathLike[str], *, encoding: str = "fixed", max_quant_l1: float = MAX_QUANT_L1
    ) -> Path:
        """Write this dataset (or view) as an ``.npz`` file in the documented format.

        ``encoding``: ``"fixed"`` (default) stores each probability as an integer multiple of
        ``2**-e``, with ``e`` chosen per distribution as the coarsest giving an L1 error of at most
        ``max_quant_l1`` (1e-6) and the stored sum kept exact; ``"float32"`` or ``"float64"``
        store the values as such (``"float64"`` keeps user arrays exact). Members are LZMA
        compressed; ``numpy.load`` reads the file. Returns the path written.
        """
        if encoding not in ("fixed", "float32", "float64"):
            raise ValueError("encoding must be 'fixed', 'float32' or 'float64'")
        a = self._compact()
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
        return write_npz(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LMDataset:
        """Read a file written by :meth:`save` (NumPy only, no pickles). Values of the ``fixed``
        and ``float32`` encodings are held as float32, ``float64`` as float64. A file that is not
        such an archive, or a damaged one, is a ValueError naming the file."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such dataset file")
        if not zipfile.is_zipfile(path):  # numpy would suggest allow_pickle=True for random bytes
            raise ValueError(f"{path}: not a dataset file (expected an .npz archive in the {FORMAT} format)")
        try:
            return cls._load(path)
        except (KeyError, EOFError, zipfile.BadZipFile, zlib.error, lzma.LZMAError) as exc:
            raise ValueError(f"{path}: damaged dataset file ({type(exc).__name__}: {exc})") from None
        except ValueError as exc:
            if str(exc).startswith(str(path)):
                raise
            raise ValueError(f"{path}: damaged dataset file ({exc})") from None

    @classmethod
    def _load(cls, path: str | os.PathLike[str]) -> LMDataset:
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
            return cls(
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


def _cat(xs: Sequence[NDArray[Any]], dtype: Any) -> NDArray[Any]:
    """The arrays end to end as ``dtype`` (an empty array of that dtype for no arrays)."""
    return np.concatenate(xs).astype(dtype) if xs else np.zeros(0, dtype)


class DatasetBuilder:
    """Accumulates contexts (one target distribution and the drafts' distributions for one prefix)
    and builds an :class:`LMDataset`, keeping per distribution the tokens carrying all but
    ``tau`` of its mass.

    ``max_tokens`` makes a sparse sample: each distribution keeps at most that many of its most
    probable tokens, so its recorded truncation may exceed ``tau`` (a context still stores the
    union over its distributions). Used where a full row cannot ship (V = 262,144, docs/DATA.md).
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


def load_dataset(path: str | os.PathLike[str] | None = None, *, model: str | None = None) -> LMDataset:
    """Load a stored dataset; ``None`` loads the one shipped with the package: ``model`` =
    ``"smollm2-135m"`` (the default: SmolLM2-135M-Instruct, layer-skip and bigram drafts,
    V = 49,152) or ``"gemma3-270m"`` (Gemma-3-270M, V = 262,144, a sparse sample with its
    truncation recorded per row); docs/DATA.md."""
    if path is not None and model is not None:
        raise ValueError("load_dataset: give a path or a model, not both")
    if path is None:
        path = default_dataset_path(model)
        if not path.exists():
            raise FileNotFoundError(f"the shipped dataset is missing from this install ({path})")
    return LMDataset.load(path)
