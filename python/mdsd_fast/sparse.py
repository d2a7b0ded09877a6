"""Sparse and top-k inputs (an alias of :mod:`mdsd_fast.inputs.sparse` and the union-support
functions of :mod:`mdsd_fast.inputs.pairs`, where the code lives)."""

from __future__ import annotations

from .inputs.pairs import pair_rows, union_pair
from .inputs.sparse import *  # noqa: F403
from .inputs.sparse import __all__ as _sparse_all
from .inputs.sparse import __doc__ as __doc__

__all__ = [*_sparse_all, "union_pair", "pair_rows"]
