"""What the benchmark scripts share: rows, timing side by side, JSON output, the numpy reference.

Every script under bench/<room>/ and studies/ puts bench/ on ``sys.path`` first, so that
``from _support import ...`` works when it is run from the repository root
(``python bench/<room>/<script>.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "_support"


def tests_on_path() -> None:
    """Make the tests' row generators (tests/_support/heldout.py, tests/_support/tree_enum.py) importable."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
