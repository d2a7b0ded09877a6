"""Rendering shared by the gap report and the tree report: terminal tables and matplotlib."""

from __future__ import annotations

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
