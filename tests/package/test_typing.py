"""The package type-checks: ``python -m mypy`` with the ``[tool.mypy]`` settings of pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_passes() -> None:
    pytest.importorskip("mypy")
    # cwd = the repository root: the config's `files` (python/mdsd_fast) and mypy's cache are there.
    # About 30 s with an empty cache (torch's types are read when it is installed), ~1 s warm.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mypy exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
