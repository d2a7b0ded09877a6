"""Test configuration: the shared test support modules (tests/_support/: brute-force references,
held-out rows, the chi-square test, cases several rooms use) are importable by bare name
(``from reference import tuple_law``) from every room's tests."""

import sys
from pathlib import Path

_SUPPORT = Path(__file__).resolve().parent / "_support"
if str(_SUPPORT) not in sys.path:
    sys.path.insert(0, str(_SUPPORT))
