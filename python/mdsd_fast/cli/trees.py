"""``mdsd-fast trees``: the tree report on the command line (trees/report.py does the work)."""

from __future__ import annotations

import argparse
import os
import zipfile
from typing import Any

from .._files import atomic_write
from .._render import wrap
from .._version import __version__
from .args import Parser, csv_of, describe, positive_int

__all__ = ["add_trees_parser"]


def add_trees_parser(sub: Any, parents: list[Parser]) -> None:
    tp = sub.add_parser(
        "trees",
        parents=parents,
        help="expected tokens per target call on drafted trees, every verifier, the tree bound",
        description="Exact expected tokens per target call of every verifier on the drafted trees of a tree file "
        "(default: the shipped SmolLM2 sample; --model gemma3-270m: the Gemma sample), per (shape, scheme, verifier), mean over trees with a 95% "
        "Student-t CI; the tree bound as an interval, the per-depth profile, the chain formula's error. "
        "Markdown on stdout; --out DIR gets trees.csv, trees.md, trees.json, trees_profile.csv and plots.",
    )
    tp.add_argument("--data", default=None, help="a tree file (.npz from extract-trees); default: the shipped sample")
    tp.add_argument(
        "--model",
        choices=("smollm2-135m", "gemma3-270m"),
        default=None,
        help="the shipped tree sample of this model (default smollm2-135m; gemma3-270m: V = 262,144)",
    )
    tp.add_argument(
        "--verifiers", type=csv_of(str), default=None, help="comma-separated (default: every one that applies)"
    )
    tp.add_argument("--shapes", type=csv_of(str), default=None, help="comma-separated tree shapes (default: all)")
    tp.add_argument("--drafts", type=csv_of(str), default=None, help="comma-separated draft models (default: all)")
    tp.add_argument("--limit", type=positive_int, default=None, help="at most this many trees per shape")
    tp.add_argument("--threads", type=positive_int, default=None, help="C++ threads (default: all cores)")
    tp.add_argument("--out", default=None, help="output directory for the files (default: print only)")
    tp.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    tp.add_argument(
        "--profile",
        default=None,
        metavar="FILE.json",
        help="write every row's per-depth acceptance as engine profiles: Model-Optimizer speculation_profile.json "
        "(schema 1.0) and vLLM synthetic_acceptance_rates (docs/guide/trees.md)",
    )
    tp.set_defaults(func=_trees)


def _trees(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..trees import load_trees
    from ..trees.report import tree_report

    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out}: exists and is not a directory")
    if args.profile is not None and (
        os.path.isdir(args.profile) or not os.path.isdir(os.path.dirname(args.profile) or ".")
    ):
        raise ValueError(f"--profile {args.profile}: not a file in an existing directory")
    if args.data is not None and not os.path.isfile(args.data):
        raise ValueError(f"--data {args.data}: no such file")
    if args.data is not None and args.model is not None:
        raise ValueError("arguments --data/--model: give a tree file or a model's shipped sample, not both")
    if args.data is not None and not zipfile.is_zipfile(args.data):  # numpy would advise allow_pickle=True
        raise ValueError(f"--data {args.data}: not a tree file written by extract-trees (not an .npz archive)")
    try:
        data = load_trees(args.data, model=args.model)
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:  # whatever the bytes were
        why = "it holds Python objects" if "allow_pickle" in str(exc) else describe(exc)
        raise ValueError(f"--data {args.data}: not a tree file written by extract-trees ({why})") from None
    try:
        rep = tree_report(
            data,
            verifiers=args.verifiers,
            shapes=args.shapes,
            drafts=args.drafts,
            limit=args.limit,
            threads=args.threads,
        )
    except ValueError as exc:
        field_, _, rest = str(exc).partition(": ")
        if field_ in ("verifiers", "shapes", "drafts", "limit", "threads"):
            raise ValueError(f"argument --{field_}: {rest}") from None
        if field_ == "shapes, drafts":
            raise ValueError(f"arguments --shapes/--drafts: {rest}") from None
        raise
    m = rep.metadata
    print(
        f"mdsd_fast {__version__} tree report: {m['trees']} drafted trees, {len(m['shapes'])} shapes ({m['seconds']} s)"
    )
    print("Exact expected tokens per target call given each drafted tree, mean over trees (95% Student-t CI);")
    print("bound = the tree bound of per-node verifiers as [low, high] (docs/guide/trees_report.md);")
    print("chain formula = (1 - a^(g+1)) / (1 - a) at the root's alpha (its error vs the exact value).")
    print("The values are exact for the rows conditioned on the stored supports; root acc. (uncut rows) = mean")
    print("interval holding the root's acceptance on the model's uncut rows (acceptance_bounds).\n")
    print(rep.markdown())
    print("\nFindings on this data:\n")
    print(rep.findings_markdown())
    if args.profile is not None:
        from ..trees.profile import tree_report_profiles, write_profiles

        try:
            target = {"name": data.info["target"]} if data.info.get("target") else None
            profs = tree_report_profiles(rep)
            n = len(
                write_profiles(args.profile, profs, producer=f"mdsd_fast {__version__}", target_model=target)[
                    "profiles"
                ]
            )
        except (OSError, ValueError) as exc:
            raise ValueError(f"--profile {args.profile}: cannot write it ({describe(exc)})") from None
        print(f"\nprofiles: {n} written to {args.profile}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        rep.to_csv(out / "trees.csv")
        rep.profile_csv(out / "trees_profile.csv")
        rep.to_json(out / "trees.json")
        atomic_write(
            out / "trees.md",
            f"# mdsd_fast tree report\n\n{rep.markdown()}\n\n## Findings\n\n{rep.findings_markdown()}\n",
        )
        files = ["trees.md", "trees.csv", "trees_profile.csv", "trees.json"]
        if not args.no_plots:
            try:
                files += [Path(f).name for f in rep.plot(out)]
            except ImportError as exc:
                print("\n" + "\n".join(wrap(f"(no plots: {exc})")))
        print("\n" + "\n".join(wrap(f"files in {out}: " + ", ".join(files), indent="  ")))
    return 0
