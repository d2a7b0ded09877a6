"""``mdsd-fast audit``: a verifier callable ``module:function`` audited for losslessness on the
command line (mdsd_fast.audit does the work)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .._version import __version__
from .args import Parser, nonnegative_int, positive_float, positive_int

__all__ = ["add_audit_parser"]


def _load_callable(spec: str, what: str) -> Any:
    """``module:attr`` (a dotted module importable from the current directory, or a path to a .py
    file) -> the object; any failure is a ValueError of one line."""
    import importlib
    import importlib.util

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"{what}: expected module:function (e.g. my_engine:verify or path/to/engine.py:verify), got {spec!r}"
        )
    try:
        if module_name.endswith(".py"):
            loc = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
            if loc is None or loc.loader is None or not os.path.isfile(module_name):
                raise FileNotFoundError(f"no such file {module_name!r}")
            module = importlib.util.module_from_spec(loc)
            loc.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # as `python -m` would: modules next to the user
            module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: ImportError, SyntaxError, whatever it raises
        raise ValueError(f"{what}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{what}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{what}: {spec!r} is a {type(obj).__name__}, not a callable")
    return obj


def add_audit_parser(sub: Any, parents: list[Parser]) -> None:
    from ..audit import DEFAULT_ALPHA, DEFAULT_SAMPLES, SCHEMES

    ap = sub.add_parser(
        "audit",
        parents=parents,
        help="audit a verifier callable module:function for losslessness",
        description="Calls verify(p, q, drafts, rng) -> token on a built-in suite of cases (docs/guide/audit.md), tests "
        "the output law against p and the acceptance against alpha*, prints a per-case table and a verdict. "
        "Exit code 0: lossless (no evidence of a bug), 1: not lossless, 2: usage error.",
    )
    ap.add_argument("verify", metavar="module:function", help="the verifier; a module importable from here or file.py")
    ap.add_argument(
        "--scheme",
        default="iid",
        help=f"how drafts are drawn: {', '.join(SCHEMES)}, top<m>+iid or top<m>+wor (default iid)",
    )
    ap.add_argument("--n", type=positive_int, default=2, help="drafts per position (default 2)")
    ap.add_argument(
        "--samples", type=positive_int, default=DEFAULT_SAMPLES, help=f"per case (default {DEFAULT_SAMPLES})"
    )
    ap.add_argument("--seed", type=nonnegative_int, default=0, help="root seed (default 0)")
    ap.add_argument(
        "--alpha", type=positive_float, default=DEFAULT_ALPHA, help=f"false-alarm rate (default {DEFAULT_ALPHA:g})"
    )
    ap.add_argument("--draft", default=None, metavar="module:function", help="a custom drafter draft(q, n, rng)")
    ap.add_argument("--batched", action="store_true", help="verify is verify(p, q, drafts[B, n], rng) -> tokens[B]")
    ap.add_argument(
        "--real", type=nonnegative_int, default=0, help="add this many rows of the shipped dataset (V = 49,152)"
    )
    ap.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    from ..audit import audit

    # a ValueError or TypeError here (AuditError included: it names the case) is one line, exit 2
    verify = _load_callable(args.verify, "verify")
    draft = _load_callable(args.draft, "--draft") if args.draft else None
    res = audit(
        verify,
        args.scheme,
        args.n,
        draft=draft,
        samples=args.samples,
        rng=args.seed,
        alpha=args.alpha,
        batched=args.batched,
        real=args.real,
    )
    print(f"mdsd_fast {__version__} audit of {args.verify} ({res.seconds:.1f} s)\n")
    print(res)
    return 0 if res.lossless else 1
