"""The main job: the gap between published verifiers and alpha* on real next-token distributions.

:func:`gap_report` computes it over a dataset (``mdsd-fast report``), :func:`log_report` streams it
over a sharded log in memory bounded by a chunk; both give the same records, findings and tables.
"""

from __future__ import annotations

from ..trees.shapes import expected_tokens
from .config import DEFAULT_VERIFIERS, ReportConfig
from .gap import GapReport, gap_report, iter_records
from .logs import is_log_dir, log_report

__all__ = [
    "ReportConfig",
    "GapReport",
    "gap_report",
    "iter_records",
    "expected_tokens",
    "DEFAULT_VERIFIERS",
    "log_report",
    "is_log_dir",
]
