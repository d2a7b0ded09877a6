"""The package's version: the C++ core's, which the build takes from git (pyproject.toml)."""

from __future__ import annotations

from . import _core

__version__: str = _core.__version__
