"""Next-token distribution datasets: the stored format, the loader and chunked iteration.

A dataset is a list of *rows*. Each row is one pair ``(p, q)`` of next-token distributions over a
vocabulary of ``V`` tokens: ``p`` from the target model, ``q`` from one draft construction, both for
the same prefix and at the same temperature. Several drafts can share a prefix (a *context*); the
target distribution and the token list are then stored once for all of them.

The on-disk format (``.npz`` with LZMA-compressed members, readable with ``numpy.load`` alone; see
docs/guide/data.md) stores per context only the tokens that carry the mass of ``p`` or of any ``q`` of
that context: for each distribution the smallest set of most probable tokens holding at least
``1 - 1e-6`` of its mass, and the union of those sets. The mass left out (the *truncation*) is
recorded per distribution and is at most 1e-6. Token ids are stored as uint16 gaps. Probabilities
are stored in fixed point (integer multiples of ``2**-e``, ``e`` per distribution) with an L1 error
of at most 1e-6 per distribution, also recorded; the stored sums are exact. At T = 1 a 49k-token
distribution needs ~30,000 tokens to reach ``1 - 1e-6``, which is why the values are compressed
this way (float32 would take ~3x the space).

Only NumPy is needed here; ``torch`` is never imported.

The package holds the shipped ``.npz`` files and one module per concern: ``_dataset``
(:class:`LMDataset`), ``_chunks`` (blocks of rows), ``_layout`` (the rules every stored dataset
obeys, the compaction of a view), ``_format`` (the ``.npz`` members and the value encoding),
``_builder`` (:class:`DatasetBuilder`, :func:`from_arrays`) and ``_shipped`` (the shipped files,
:func:`load_dataset`). Import the names from here.

>>> ds = load_dataset()                                     # the shipped SmolLM2-135M dataset
>>> mild = ds.select(draft="skip2", temperature=0.7)        # a view; nothing is copied
>>> p, q = mild.dense(np.float64)                           # dense (B, 49152) arrays
>>> for chunk in ds.iter_chunks(256, sparse=True):          # compact chunks for large files
...     pc, qc = chunk.padded()                             # (b, L) on each row's own support
"""

from __future__ import annotations

from ._builder import DatasetBuilder, from_arrays, top_mass_tokens
from ._chunks import DenseChunk, SparseChunk
from ._dataset import LMDataset
from ._format import FORMAT, FORMAT_VERSION, MAX_QUANT_L1, MAX_TRUNCATION
from ._format import write_npz as write_npz
from ._shipped import DEFAULT_DATASET_FILE, SHIPPED_MODELS, default_dataset_path, load_dataset
from ._shipped import shipped_model as shipped_model

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
