"""``mdsd-fast`` (also ``python -m mdsd_fast``): argument parsing and the error contract, nothing else."""

from __future__ import annotations

from .commands import build_parser, main

__all__ = ["main", "build_parser"]
