"""Which kind of input an argument is (logits, top-k rows, scipy.sparse rows), asked without loading
the modules that define the kinds.

An object is a :class:`~mdsd_fast.Logits` or a :class:`~mdsd_fast.TopK` only once the module of its
class has run, so these checks look the class up in ``sys.modules`` and never import it: a call on
dense arrays, the common case, does not load :mod:`~mdsd_fast.inputs.logits` or
:mod:`~mdsd_fast.inputs.sparse` (nor does ``import mdsd_fast``).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_logits", "is_sparse"]

_LOGITS = f"{__package__}.logits"
_SPARSE = f"{__package__}.sparse"


def is_logits(x: Any) -> bool:
    """A :class:`~mdsd_fast.Logits` (logits plus an engine's sampling settings)."""
    # isinstance of () is False: the module not loaded (or not yet holding the class)
    return isinstance(x, getattr(sys.modules.get(_LOGITS), "Logits", ()))


def is_sparse(x: Any) -> bool:
    """A :class:`TopK` or a scipy.sparse matrix / array."""
    return isinstance(x, getattr(sys.modules.get(_SPARSE), "TopK", ())) or (
        type(x).__module__.startswith("scipy.sparse") and hasattr(x, "tocsr")
    )
