"""What p and q may be: the input rules, logits with an engine's sampling settings, sparse and top-k rows.

* :mod:`~mdsd_fast.inputs.rules`: the rules every probability array follows, with the errors users see.
* :mod:`~mdsd_fast.inputs.logits`: :class:`Logits`, the distribution an engine samples from given logits
  (also importable as :mod:`mdsd_fast.constraints`).
* :mod:`~mdsd_fast.inputs.sparse`: :class:`TopK` and scipy.sparse rows (also :mod:`mdsd_fast.sparse`).
* :mod:`~mdsd_fast.inputs.pairs`: any of those turned into the rows the C++ core reads.
* :mod:`~mdsd_fast.inputs.args`: the checks of the arguments every verifier route shares.
"""

from __future__ import annotations

from .logits import Logits, pair, probabilities
from .sparse import TopK

__all__ = ["Logits", "TopK", "pair", "probabilities"]
