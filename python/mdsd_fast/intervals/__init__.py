"""Rigorous bounds on alpha* (or a verifier's acceptance) from truncated top-k logs: ``acceptance_bounds``.

The interval holds alpha* of every completion of the unseen mass (docs/guide/intervals.md);
:func:`~mdsd_fast.intervals.truncation.sample_bounds` applies it to a dataset whose rows were cut.
"""

from __future__ import annotations

from .bounds import BOUND_SLACK, acceptance_bounds

__all__ = ["acceptance_bounds", "BOUND_SLACK"]
