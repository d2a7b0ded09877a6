"""Served logs: does a server's output follow the distributions it logged?

:func:`check_served` reads a served log (OpenAI-style JSONL with per-token ``top_logprobs``, or a
log directory of served rows) and tests, exactly and in bounded memory, whether each emitted token
was drawn from the distribution logged at its position; :func:`generate_served` writes served
logs from the shipped distributions, lossless or with a reproduced engine bug, to test it on;
:func:`to_log` stores a JSONL served log in the package's log format. docs/guide/served.md.
"""

from __future__ import annotations

from .check import DEFAULT_ALPHA, GroupRow, RankRow, ServedCheck, check_served
from .generate import ENGINES, LOSSLESS, ServedRows, generate_served, served_rows
from .stats import BINS, REPLICATES
from .to_log import to_log

__all__ = [
    "BINS",
    "DEFAULT_ALPHA",
    "ENGINES",
    "LOSSLESS",
    "REPLICATES",
    "GroupRow",
    "RankRow",
    "ServedCheck",
    "ServedRows",
    "check_served",
    "generate_served",
    "served_rows",
    "to_log",
]
