"""``mdsd-fast frontier``: the lossy rules' frontier on the command line (report/frontier.py does the work)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .._version import __version__
from ..data import SHIPPED_MODELS, default_dataset_path
from .args import Parser, positive_int

__all__ = ["add_frontier_parser"]


def add_frontier_parser(sub: Any, parents: list[Parser]) -> None:
    fp = sub.add_parser(
        "frontier",
        parents=parents,
        help="acceptance gained vs distance paid by the engines' lossy rules, beside lossless verifiers and alpha*",
        description="For each lossy acceptance rule and setting (SGLang thresholds, typical acceptance, entropy "
        "verify, relaxed acceptance), the exact mean acceptance and total variation from the target over the "
        "positions of a dataset (default: the shipped SmolLM2 sample), beside the lossless verifiers and alpha* "
        "at n = 1..MAX_N on the same positions, and the smallest n at which each lossless one reaches each lossy "
        "setting. Markdown on stdout; --out DIR gets frontier.csv, frontier.md and frontier.png.",
    )
    fp.add_argument("--dataset", default=None, help="a dataset file (.npz); default: the shipped SmolLM2 sample")
    fp.add_argument(
        "--model",
        choices=tuple(SHIPPED_MODELS),
        default=None,
        help="the shipped sample of this model instead (gemma3-270m: V = 262,144, about 7 minutes)",
    )
    fp.add_argument("--limit", type=positive_int, default=None, help="only the first LIMIT positions")
    fp.add_argument("--max-n", type=positive_int, default=8, help="largest n of the lossless side (default 8)")
    fp.add_argument("--out", default=None, help="output directory for the files (default: print only)")
    fp.add_argument("--no-plot", action="store_true", help="skip the PNG")
    fp.set_defaults(func=_frontier)


def _frontier(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..report.frontier import frontier

    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out}: exists and is not a directory")
    if args.dataset is not None and not os.path.isfile(args.dataset):
        raise ValueError(f"--dataset {args.dataset}: no such file")
    if args.dataset is not None and args.model is not None:
        raise ValueError("arguments --dataset/--model: give a dataset file or a shipped model, not both")
    if args.max_n > 32:
        raise ValueError(f"argument --max-n: at most 32, got {args.max_n}")
    dataset = args.dataset if args.model is None else default_dataset_path(args.model)
    fr = frontier(dataset, limit=args.limit, max_n=args.max_n)
    m = fr.metadata
    print(f"mdsd_fast {__version__} lossy frontier: {m['positions']} positions of {m['source']} ({m['seconds']} s)")
    print()
    print(fr.markdown())
    if out is not None:
        for f in fr.write(out, plot=not args.no_plot):
            print(f"wrote {f}")
    return 0
