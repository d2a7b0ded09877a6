"""The dataset class, :class:`LMDataset`: rows of (target p, draft q) next-token distributions
with metadata, selections as views, dense and chunked access, and its ``save`` / ``load`` (the
format itself is ``_format``, the layout rules ``_layout``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _format, _layout
from ._chunks import DenseChunk, SparseChunk
from ._format import MAX_QUANT_L1
from ._layout import ROW_FIELDS, as_str_array, match


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
        self._prompt_ids = as_str_array(prompt_ids)
        self._prompt_domains = as_str_array(prompt_domains)
        self._draft_names = as_str_array(draft_names)
        specs = list(draft_specs) if draft_specs is not None else ["{}"] * len(self._draft_names)
        self._draft_specs = as_str_array(specs)
        self.info: dict[str, Any] = dict(info or {})
        lens = np.diff(self._ctx_offsets)
        self._row_qoff = np.concatenate([[0], np.cumsum(lens[self._row_ctx])]).astype(np.int64)
        self._rows = np.arange(self._row_ctx.size, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
        self._dense_cache: tuple[NDArray[Any], NDArray[Any]] | None = None
        _layout.check(self)

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
        if name == "n_tokens":
            return np.diff(self._ctx_offsets)[ctx]
        # every other field is an array indexed by the row's draft, prompt, context or the row itself
        per_draft = {"draft": self._draft_names, "draft_spec": self._draft_specs}
        per_prompt = {"domain": self._prompt_domains, "prompt_id": self._prompt_ids}
        per_ctx = {
            "temperature": self._ctx_temperature,
            "position": self._ctx_position,
            "token": self._ctx_token,
            "p_truncation": self._p_trunc,
            "p_quantization": self._p_quant,
        }
        per_row = {"q_truncation": self._q_trunc, "q_quantization": self._q_quant}
        for table, index in (
            (per_draft, self._row_draft[r]),
            (per_prompt, self._ctx_prompt[ctx]),
            (per_ctx, ctx),
            (per_row, r),
        ):
            if name in table:
                return table[name][index]
        raise KeyError(f"unknown column {name!r}; known: {', '.join(ROW_FIELDS + ('draft_spec',))}")

    @property
    def meta(self) -> list[dict[str, Any]]:
        """One record per row: row, context, draft, temperature, domain, prompt_id, position
        (index of the generated token, 0 = first), token (the token the target then sampled, -1 if
        unknown), p_truncation and q_truncation (mass of the tokens not stored), p_quantization and
        q_quantization (L1 distance between the stored values and the model's, from the value
        encoding; 0 when exact), n_tokens (stored support size). Models and draft
        constructions are described in :attr:`info` and :meth:`draft_spec`."""
        cols = {name: self.column(name) for name in ROW_FIELDS}
        out = []
        for i in range(len(self)):
            rec: dict[str, Any] = {}
            for name in ROW_FIELDS:
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
            mask &= match(self.column("draft"), draft)
        if temperature is not None:
            mask &= match(self.column("temperature"), temperature, numeric=True)
        if domain is not None:
            mask &= match(self.column("domain"), domain)
        if prompt_id is not None:
            mask &= match(self.column("prompt_id"), prompt_id)
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
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size: expected a positive integer (rows per chunk), got {size!r}")
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
        if encoding not in _format.ENCODINGS:
            raise ValueError("encoding must be 'fixed', 'float32' or 'float64'")
        return _format.write_npz(path, _format.encode(_layout.compact(self), encoding, max_quant_l1))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LMDataset:
        """Read a file written by :meth:`save` (NumPy only, no pickles). Values of the ``fixed``
        and ``float32`` encodings are held as float32, ``float64`` as float64. A file that is not
        such an archive, or a damaged one, is a ValueError naming the file."""
        return _format.load(path, cls)
