"""Sampling constraints (an alias of :mod:`mdsd_fast.inputs.logits`, where the code lives)."""

from __future__ import annotations

from .inputs.logits import *  # noqa: F403
from .inputs.logits import __all__ as __all__
from .inputs.logits import __doc__ as __doc__
