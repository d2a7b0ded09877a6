"""Reading back what a report's units wrote, for the log-report and findings tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def shard_positions(out: Path) -> dict[int, dict[str, float]]:
    """Per row id, every per-position value the units of the report in ``out`` wrote."""
    vals: dict[int, dict[str, float]] = {}
    for f in sorted((out / "shards").glob("*.npz")):
        with np.load(f) as z:
            for i, r in enumerate(z["rows"]):
                vals[int(r)] = {k: float(z[k][i]) for k in z.files if k not in ("__meta__", "rows")}
    return vals
