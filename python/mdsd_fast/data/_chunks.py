"""Blocks of consecutive rows of a dataset, dense (:class:`DenseChunk`) or on each row's stored
support (:class:`SparseChunk`), as :meth:`~mdsd_fast.data.LMDataset.iter_chunks` yields them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


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
