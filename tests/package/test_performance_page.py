"""docs/performance.md is what ``bench/performance.py`` generates from bench/results/ today: a new
result file, or a page edited by hand, fails here until the page is generated again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_performance_page_is_generated_from_the_results() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "performance.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
