"""What the bench scripts share: writing a run's rows as JSON (``--json FILE``)."""

from __future__ import annotations

import json
import os
from typing import Any


def write_rows(path: str, rows: list[dict[str, Any]]) -> None:
    """Write ``{"rows": rows}`` to path, creating its folder."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"rows": rows}, fh, indent=1)
