"""Test configuration: the shared test support modules (tests/_support/) and every room's folder are importable
by bare name, so a test can reuse another room's reference implementation (``from reference import
tuple_law``) wherever it lives."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _d in [_HERE / "_support", *sorted(p for p in _HERE.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))]:
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))
