"""Rendering shared by the gap report and the tree report: terminal tables and matplotlib."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def pipe_table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    """Pipe table with every column padded to its widest cell (numbers right-aligned)."""
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    return [line(header), rule, *(line(r) for r in rows)]


#: The width every line the reports print fits in (a terminal of 100 columns).
WIDTH = 100


def split_table(
    header: list[str], rows: list[list[str]], right: set[int], keys: int, width: int = WIDTH
) -> list[list[str]]:
    """``pipe_table`` cut into tables of at most ``width`` characters: the first ``keys`` columns
    start every table, the other columns go, in order, to the first table they fit in next.

    A column too wide for any table with the key columns gets a table of its own (wider than
    ``width``: the one case the width cannot be kept).
    """
    size = [max(len(c) for c in col) + 3 for col in zip(header, *rows, strict=True)]  # "| " + cell + " "
    head = 1 + sum(size[:keys])
    groups: list[list[int]] = []
    used = width + 1
    for i in range(keys, len(header)):
        if used + size[i] > width:
            groups.append([])
            used = head
        groups[-1].append(i)
        used += size[i]
    out = []
    for cols in groups or [[]]:
        pick = list(range(keys)) + cols
        out.append(
            pipe_table(
                [header[i] for i in pick],
                [[r[i] for i in pick] for r in rows],
                {k for k, i in enumerate(pick) if i in right},
            )
        )
    return out


def wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    """``text`` wrapped at ``width``, later lines indented by ``indent`` (bullets hang); a word
    longer than a line (a path) is left whole rather than cut."""
    return textwrap.wrap(
        text, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [""]


#: Verifiers in a fixed order: each keeps its colour in every figure (the gap report's and the tree
#: report's); a name not listed gets one of the later colours, chosen from its letters.
COLOURED = ("sd", "rrs", "kseq", "rrs-wor", "spechub", "greedy", "topk", "optimal", "sweep", "optimal-lp",
            "block", "traversal")  # fmt: skip
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd")  # fmt: skip


def colour(name: str) -> str:
    """The colour of verifier ``name`` in every figure."""
    if name in COLOURED:
        return _PALETTE[COLOURED.index(name)]
    return _PALETTE[len(COLOURED) + sum(name.encode()) % (len(_PALETTE) - len(COLOURED))]


def pyplot(out_dir: Path) -> Any:
    """matplotlib.pyplot on the file-only Agg backend (the ``plot`` extra), with ``out_dir`` made;
    shared by the gap report's and the tree report's plots."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError("plots need matplotlib: pip install 'mdsd_fast[plot]'") from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    return plt
