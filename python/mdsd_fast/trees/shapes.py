"""The tree shapes engines use (how each is drafted), and the chain formula.

:data:`SHAPES` are the drafting laws of the shipped tree samples (``mdsd-fast extract-trees`` grows
them from a real model; docs/guide/data.md "Draft trees" lists them); the tree report reads them for the
tree bound. :func:`expected_tokens` is the expected tokens per target call of a chain at a
per-position acceptance, the formula the gap report and the tree report compare against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["SHAPES", "TreeShape", "expected_tokens"]


#: EAGLE's ``mc_sim_7b_63`` choice list (rank paths of the children kept), truncated to depth 4:
#: its first 23 of 25 paths, as in SafeAILab/EAGLE eagle/model/choices.py (docs/guide/data.md)
EAGLE_MC_SIM_7B_63_D4: tuple[tuple[int, ...], ...] = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2),
)  # fmt: skip


@dataclass(frozen=True)
class TreeShape:
    """How a tree is drafted. ``kind``: ``chain`` (one i.i.d. draft per step), ``branch``
    (``widths[d]`` children per node at depth d, drawn without replacement), ``kseq`` (``k``
    i.i.d. sequences: a child reached m times continues with m i.i.d. draws), ``static`` (the
    children ranked ``choices`` of q, EAGLE-style; verified as ``topk``) or ``dynamic`` (EAGLE-2:
    at each depth expand the ``beam`` frontier nodes of highest path probability under q with
    their top ``k`` children; keep the ``budget`` nodes of highest path probability)."""

    name: str
    kind: str
    depth: int
    widths: tuple[int, ...] = ()
    k: int = 0
    beam: int = 0
    budget: int = 0
    choices: tuple[tuple[int, ...], ...] = field(default=(), repr=False)


SHAPES: dict[str, TreeShape] = {
    s.name: s
    for s in (
        TreeShape("chain4", "chain", 4),
        TreeShape("chain6", "chain", 6),
        TreeShape("b2x4", "branch", 4, widths=(2, 2, 2, 2)),
        TreeShape("b4x3", "branch", 3, widths=(4, 4, 4)),
        TreeShape("kseq4x4", "kseq", 4, k=4),
        TreeShape("kseq8x4", "kseq", 4, k=8),
        TreeShape("eagle63d4", "static", 4, choices=EAGLE_MC_SIM_7B_63_D4),
        TreeShape("eagle2k4", "dynamic", 4, k=4, beam=4, budget=20),
    )
}


def expected_tokens(alpha: float | NDArray[np.float64], gamma: int) -> Any:
    """Expected tokens per target call for γ drafted positions with per-position acceptance α:
    (1 − α^(γ+1)) / (1 − α), which is γ + 1 at α = 1."""
    a = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a >= 1.0, gamma + 1.0, (1.0 - a ** (gamma + 1)) / (1.0 - a))
    return float(out) if out.ndim == 0 else out
