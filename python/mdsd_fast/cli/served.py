"""``mdsd-fast check-served``: does a served log's output follow its logged distributions?
(mdsd_fast.served does the work)."""

from __future__ import annotations

import argparse
from typing import Any

from .args import Parser, nonnegative_int, positive_float, positive_int

__all__ = ["add_check_served_parser"]


def add_check_served_parser(sub: Any, parents: list[Parser]) -> None:
    from ..served import DEFAULT_ALPHA, REPLICATES

    sp = sub.add_parser(
        "check-served",
        parents=parents,
        help="test whether a served log's tokens follow the distributions it logged",
        description="Reads an OpenAI-style JSONL file (one response per line, choices[].logprobs.content[] with "
        "token, logprob and top_logprobs) or a log directory of served rows, and tests exactly whether each "
        "emitted token was drawn from the distribution logged at its position (the unlogged tail is one "
        "outcome); prints the verdict, its power and where a failure sits (docs/guide/served.md). "
        "Exit code 0: no evidence against losslessness, 1: not lossless, 2: usage error.",
    )
    sp.add_argument("path", metavar="PATH", help="a JSONL file or a log directory")
    sp.add_argument(
        "--alpha", type=positive_float, default=DEFAULT_ALPHA, help=f"false-alarm rate (default {DEFAULT_ALPHA:g})"
    )
    sp.add_argument("--workers", type=positive_int, default=1, help="local worker processes (default 1)")
    sp.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the randomisation (default 0)")
    sp.add_argument(
        "--replicates",
        type=positive_int,
        default=REPLICATES,
        help=f"Monte Carlo replicates of the null (default {REPLICATES})",
    )
    sp.set_defaults(func=_check_served)


def _check_served(args: argparse.Namespace) -> int:
    from ..served import check_served

    try:
        res = check_served(
            args.path, alpha=args.alpha, workers=args.workers, seed=args.seed, replicates=args.replicates
        )
    except ValueError as exc:  # check_served names its argument first: name the option instead
        field, _, rest = str(exc).partition(": ")
        if field in ("alpha", "replicates"):
            raise ValueError(f"argument --{field}: {rest}") from None
        raise
    print(res)
    print(f"\n({res.seconds:.1f} s)")
    return 0 if res.lossless else 1
