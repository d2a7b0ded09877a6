"""Command line: ``mdsd-fast`` (also ``python -m mdsd_fast``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._version import __version__
from ..bound.alpha import optimal_acceptance
from ..bound.lp import solve_lp
from ..data import SHIPPED_MODELS, default_dataset_path
from ..inputs.rules import Scheme
from ..limits import REPORT_MAX_N
from ..report.gap import DEFAULT_VERIFIERS
from .args import (
    Parser,
    csv_of,
    debug_parent,
    did_you_mean,
    finite_float,
    nonnegative_int,
    positive_float,
    positive_int,
    run,
    writable_dir,
)

# The worked examples of docs/theory/examples.md §10 (p, q).
EXAMPLES: dict[str, tuple[list[float], list[float]]] = {
    "A": ([1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 6, 1 / 2]),
    "B": ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]),
    "C": ([0.6, 0.2, 0.1, 0.1], [0.3, 0.3, 0.3, 0.1]),
    "D": ([0.4, 0.3, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.2, 0.2]),
    "E": ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]),
    "F": ([0.6, 0.25, 0.1, 0.05], [0.3, 0.4, 0.2, 0.1]),
}


def _demo(args: argparse.Namespace) -> int:
    schemes: tuple[Scheme, ...] = ("iid", "wor", "greedy")
    print(f"mdsd_fast {__version__}: optimal acceptance alpha* on the worked examples (docs/theory/examples.md §10)")
    print("Each value is computed by the sorted-prefix dual and checked against the HiGHS flow LP.\n")
    print("| case | n | " + " | ".join(f"alpha*_{s}" for s in schemes) + " | dual == LP |")
    print("|---|---|" + "---|" * len(schemes) + "---|")
    worst = 0.0
    for name, (p, q) in EXAMPLES.items():
        support = sum(1 for x in q if x > 0)
        for n in range(1, args.max_n + 1):
            cells = []
            for s in schemes:
                if s != "iid" and n > support:
                    cells.append("n/a")
                    continue
                a = optimal_acceptance(np.array(p), np.array(q), n, s)
                lp = solve_lp(np.array(p), np.array(q), n, s).alpha
                worst = max(worst, abs(a - lp))
                cells.append(f"{a:.6f}")
            print(f"| {name} | {n} | " + " | ".join(cells) + f" | {'yes' if worst < 1e-9 else 'NO'} |")
    # A real-vocabulary-sized example: Dirichlet-like heavy tails, V = 49,152.
    rng = np.random.default_rng(0)
    V = 49_152
    logits = rng.standard_normal(V) * 3.0
    p_syn = np.exp(logits - logits.max())
    p_syn /= p_syn.sum()
    q_syn = np.exp(logits + rng.standard_normal(V) * 1.0)
    q_syn /= q_syn.sum()
    print(f"\nSynthetic pair at V = {V:,} (sum min(p, q) = {np.minimum(p_syn, q_syn).sum():.4f}):\n")
    print("| n | alpha*_iid | alpha*_wor | alpha*_greedy | ms (iid / wor) |")
    print("|---|---|---|---|---|")
    for n in (1, 2, 4, 8):
        t0 = time.perf_counter()
        a_iid = optimal_acceptance(p_syn, q_syn, n, "iid")
        t1 = time.perf_counter()
        a_wor = optimal_acceptance(p_syn, q_syn, n, "wor")
        t2 = time.perf_counter()
        a_gr = optimal_acceptance(p_syn, q_syn, n, "greedy")
        print(f"| {n} | {a_iid:.6f} | {a_wor:.6f} | {a_gr:.6f} | {1e3 * (t1 - t0):.1f} / {1e3 * (t2 - t1):.1f} |")
    print(f"\nlargest |dual - LP| on the worked examples: {worst:.2e}")
    return 0 if worst < 1e-9 else 1


def _add_report_parser(sub: Any, parents: list[Parser]) -> None:
    rp = sub.add_parser(
        "report",
        parents=parents,
        help="the gap between verifiers and the bound alpha* on real distributions (the main job)",
        description="Mean alpha* per (domain, temperature, draft, scheme, n) with 95% CIs, each verifier's "
        "acceptance and its gap to the bound, expected tokens per target call; markdown on stdout, "
        "CSV/JSON/PNG in --out. Errors are one line on stderr and exit code 2.",
    )
    src = rp.add_mutually_exclusive_group()
    src.add_argument(
        "--dataset",
        default=None,
        help="a dataset file, a directory of dataset shards (.npz), or a log directory (manifest.json + "
        "Parquet shards, streamed in chunks: docs/guide/logs.md); default: the shipped SmolLM2 data",
    )
    src.add_argument(
        "--arrays",
        nargs=2,
        metavar=("P.npy", "Q.npy"),
        default=None,
        help="your own (B, V) target and draft arrays instead of a dataset",
    )
    src.add_argument(
        "--model",
        choices=tuple(SHIPPED_MODELS),
        default=None,
        help="the shipped data of this model (default smollm2-135m; gemma3-270m: a sparse sample, V = 262,144)",
    )
    rp.add_argument(
        "--schemes",
        type=csv_of(str),
        default=("iid", "wor", "greedy", "topk"),
        help="comma-separated (default iid,wor,greedy,topk; mixed schemes such as top1+iid, top2+wor too)",
    )
    rp.add_argument(
        "--n",
        type=csv_of(positive_int),
        default=(1, 2, 3, 4),
        help=f"numbers of drafts, comma-separated, each 1..{REPORT_MAX_N} (default 1,2,3,4)",
    )
    rp.add_argument(
        "--verifiers",
        type=csv_of(str),
        default=None,
        help=f"comma-separated, each run under the --schemes it drafts for (default {','.join(DEFAULT_VERIFIERS)}; "
        "also optimal-lp on small data)",
    )
    rp.add_argument(
        "--temperatures", type=csv_of(finite_float), default=None, help="only these temperatures, comma-separated"
    )
    rp.add_argument("--domain", type=csv_of(str), default=None, help="log directories: only these domains")
    rp.add_argument("--draft", type=csv_of(str), default=None, help="log directories: only these drafts")
    rp.add_argument("--limit", type=positive_int, default=None, help="log directories: the first N positions only")
    rp.add_argument("--out", default="mdsd_report", help="output directory (default ./mdsd_report)")
    rp.add_argument("--simulate", action="store_true", help="simulate every verifier instead of exact acceptance")
    rp.add_argument("--samples", type=positive_int, default=4000, help="simulated steps per position (default 4000)")
    rp.add_argument(
        "--wor-budget",
        type=positive_float,
        default=None,
        metavar="OPS",
        help="work budget per position of the without-replacement optimal verifier ('sweep'), in grid "
        "operations (default: mdsd_fast.WOR_WORK_BUDGET); a larger budget certifies more positions, slower",
    )
    rp.add_argument(
        "--seed",
        type=nonnegative_int,
        default=0,
        help="seed of the simulated verifiers (default 0; exact ones ignore it)",
    )
    rp.add_argument(
        "--bounds",
        action="store_true",
        help="on a cut sample (--model gemma3-270m): intervals containing alpha* of the uncut rows (slow)",
    )
    rp.add_argument("--gamma", type=positive_int, default=4, help="drafted positions per target call (default 4)")
    rp.add_argument(
        "--resume",
        action="store_true",
        help="reuse the groups already computed in --out on the same data, settings and code "
        "(checked by content hashes; the rest are recomputed)",
    )
    rp.add_argument("--workers", type=positive_int, default=1, help="local worker processes (default 1)")
    rp.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        help="C++ threads per group, validation included (default: all cores; 1 with --workers > 1 or --scheduler)",
    )
    rp.add_argument(
        "--scheduler",
        default=None,
        help="Dask scheduler address, e.g. tcp://127.0.0.1:8786 (checked first: an unreachable one is an error)",
    )
    rp.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    rp.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (on a terminal) or per-group progress lines on stderr (otherwise)",
    )
    rp.add_argument(
        "--max-rows", type=nonnegative_int, default=100, help="rows of the tables printed on stdout (default 100)"
    )
    rp.set_defaults(func=_report)


#: ReportConfig's argument names (its ValueErrors start with them) -> the report's options.
_CONFIG_OPTIONS = {
    "schemes": "--schemes",
    "ns": "--n",
    "verifiers": "--verifiers",
    "temperatures": "--temperatures",
    "samples": "--samples",
    "gamma": "--gamma",
    "wor_work_budget": "--wor-budget",
}


def _load_npy(path: str) -> Any:
    """One ``--arrays`` file, with an error naming it for anything but a numeric .npy array."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--arrays {path}: no such file")
    with open(path, "rb") as fh:
        magic = fh.read(6)
    if magic[:2] == b"PK":
        raise ValueError(f"--arrays {path}: an .npz archive; --arrays takes two .npy files (--dataset takes .npz)")
    if magic != b"\x93NUMPY":
        raise ValueError(f"--arrays {path}: not a .npy file (written by numpy.save)")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc):  # an object array: never unpickled from a user's file
            raise ValueError(f"--arrays {path}: holds Python objects; give a float32 or float64 array") from None
        raise ValueError(f"--arrays {path}: corrupt .npy file ({exc})") from None
    except (EOFError, OSError) as exc:
        raise ValueError(f"--arrays {path}: corrupt or truncated .npy file ({exc})") from None


def _report(args: argparse.Namespace) -> int:

    from ..report.gap import GapReport, ReportConfig, gap_report

    if args.scheduler and args.workers != 1:
        raise ValueError("--workers: runs local processes; with --scheduler the cluster's workers run the groups")
    try:
        cfg = ReportConfig(
            schemes=args.schemes,
            ns=args.n,
            verifiers=args.verifiers or DEFAULT_VERIFIERS,
            temperatures=args.temperatures,
            exact=not args.simulate,
            samples=args.samples,
            wor_work_budget=args.wor_budget,
            bounds=args.bounds,
            seed=args.seed,
            gamma=args.gamma,
            threads=args.threads or (1 if (args.workers > 1 or args.scheduler) else None),
        )
    except ValueError as exc:
        field_, _, rest = str(exc).partition(": ")
        if field_ not in _CONFIG_OPTIONS:
            raise
        raise ValueError(f"argument {_CONFIG_OPTIONS[field_]}: {rest}") from None
    idle = cfg.idle_verifiers()
    if args.verifiers is not None and idle:  # asked for by name: never dropped without a word
        raise ValueError("argument --verifiers: " + "; ".join(f"{v} {why}" for v, why in idle.items()))
    out = writable_dir(args.out)  # checked now, not after the data has loaded
    from ..report.logs import is_log_dir, log_report
    from .output import print_report

    t0 = time.perf_counter()
    progress = False if args.no_progress else None
    command = " ".join(["mdsd-fast", *sys.argv[1:]])
    if is_log_dir(args.dataset):
        logged: GapReport = log_report(
            args.dataset,
            config=cfg,
            out_dir=out,
            resume=args.resume,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=progress,
            domain=args.domain,
            draft=args.draft,
            limit=args.limit,
            command=command,
        )
        return print_report(logged, args, cfg, t0)
    for opt, val in (("--domain", args.domain), ("--draft", args.draft), ("--limit", args.limit)):
        if val is not None:
            raise ValueError(f"{opt}: filters a log directory (--dataset DIR holding a manifest.json) only")
    dataset: Any = args.dataset if args.model is None else default_dataset_path(args.model)
    if args.arrays:
        dataset = (_load_npy(args.arrays[0]), _load_npy(args.arrays[1]))
    try:
        rep: GapReport = gap_report(
            dataset,
            config=cfg,
            out_dir=out,
            resume=args.resume,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=progress,
            command=command,
        )
    except ValueError as exc:
        field_, _, rest = str(exc).partition(": ")
        if field_ != "temperatures":
            raise
        raise ValueError(f"argument --temperatures: {rest}") from None
    return print_report(rep, args, cfg, t0)


def build_parser() -> Parser:
    """The ``mdsd-fast`` parser with every subcommand."""
    parser = Parser(
        prog="mdsd-fast",
        description="mdsd_fast: exact optimal acceptance (alpha*) for multi-draft speculative decoding, the "
        "published verifiers, and the gap between them. `mdsd-fast report` is the main job.",
        epilog="Exit codes: 0 done, 1 a check failed (audit: not lossless), 2 a user error (one line on "
        "stderr; --debug shows the traceback), 3 an internal error (a bug: please report it).",
    )
    parser.add_argument("--version", action="version", version=f"mdsd_fast {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(
        dest="command",
        metavar="{report,trees,frontier,demo,audit,check-served,extract,extract-trees,convert}",
        parser_class=Parser,
    )
    parents = [debug_parent()]
    _add_report_parser(sub, parents)
    demo = sub.add_parser(
        "demo",
        parents=parents,
        help="print alpha* for every scheme on built-in examples",
        description="alpha* of the iid, wor and greedy schemes on the worked examples of "
        "docs/theory/examples.md and on a synthetic pair at V = 49,152, each checked against the HiGHS "
        "flow LP; exit code 1 if a value differs from the LP's. Takes a few seconds.",
    )
    demo.add_argument("--max-n", type=positive_int, default=4, help="largest number of drafts (default 4)")
    demo.set_defaults(func=_demo)
    from .audit import add_audit_parser
    from .trees import add_trees_parser

    add_audit_parser(sub, parents)
    from .served import add_check_served_parser

    add_check_served_parser(sub, parents)

    add_trees_parser(sub, parents)
    from .frontier import add_frontier_parser

    add_frontier_parser(sub, parents)
    from .convert import add_convert_parser  # pyarrow is imported only when `convert` runs
    from .extract import (
        add_extract_parser,  # torch is imported only when `extract` runs
        add_extract_trees_parser,
    )

    add_extract_parser(sub, parents)
    add_extract_trees_parser(sub, parents)
    add_convert_parser(sub, parents)
    parser.subcommands = dict(sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mdsd-fast``; returns the exit code (see ``mdsd-fast --help``)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the subcommand whose options these are not, and the option meant
        sub = parser.subcommands.get(args.command, parser)
        sub.error(f"unrecognized arguments: {' '.join(extra)}{did_you_mean(extra, sub)}")
    if args.command is None:  # bare `mdsd-fast`: what it can do, not a several-minute report
        parser.print_help()
        return 0
    return run(args.func, args, f"mdsd-fast {args.command}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
