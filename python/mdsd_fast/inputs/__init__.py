"""What p and q may be: the input rules, logits with an engine's sampling settings, sparse and top-k rows.

* :mod:`~mdsd_fast.inputs.rules`: the rules every probability array follows, with the errors users see.
* :mod:`~mdsd_fast.inputs.logits`: :class:`Logits`, the distribution an engine samples from given logits
  (also importable as :mod:`mdsd_fast.constraints`).
* :mod:`~mdsd_fast.inputs.sparse`: :class:`TopK` and scipy.sparse rows (also :mod:`mdsd_fast.sparse`).
* :mod:`~mdsd_fast.inputs.pairs`: any of those turned into the rows the C++ core reads.
* :mod:`~mdsd_fast.inputs.args`: the checks of the arguments every verifier route shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Loaded on first use (PEP 562): a call on dense arrays needs neither module.
_MODULES = ("logits", "sparse")
_LAZY = {"Logits": "logits", "pair": "logits", "probabilities": "logits", "TopK": "sparse"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY and name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(f"{__name__}.{_LAZY.get(name, name)}")
    value = mod if name in _MODULES else getattr(mod, name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))


if TYPE_CHECKING:
    from .logits import Logits, pair, probabilities
    from .sparse import TopK

__all__ = ["Logits", "TopK", "pair", "probabilities"]
