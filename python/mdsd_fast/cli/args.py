"""The command line's error contract: option types, one-line errors, ``--debug``.

A user error (a bad option value, a missing or corrupt file, an unreachable scheduler, a verifier
that raises under audit) is one line ``mdsd-fast <command>: error: ...`` on stderr and exit code 2;
``--debug`` shows its traceback. Anything else is a bug in mdsd_fast: its traceback is printed with
a line saying how to report it, and the exit code is 3 (1 is the audit's "not lossless").
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from .._version import __version__

#: Exit codes of every subcommand.
EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130

#: Exceptions that mean the user gave something wrong: the package raises ValueError / TypeError
#: naming the argument, the OS raises OSError naming the file, a missing extra is an ImportError.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, ImportError)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the usage itself is in ``--help``)."""

    #: name -> parser of each subcommand (errors about a subcommand's options come from its parser)
    subcommands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:  # a mistyped subcommand or choice: the nearest valid one
            close = difflib.get_close_matches(m.group(1), re.findall(r"'([^']*)'", m.group(2)), n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def did_you_mean(extra: list[str], parser: argparse.ArgumentParser) -> str:
    """ "; did you mean '--x'?" for the first unrecognized option close to one of ``parser``'s."""
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    for arg in extra:
        close = difflib.get_close_matches(arg.split("=")[0], options, n=1) if arg.startswith("--") else []
        if close:
            return f"; did you mean {close[0]!r}?"
    return ""


def writable_dir(path: str) -> Path:
    """``path`` as an output directory, checked by writing: a file in it if it exists, else a
    directory in its nearest existing parent (removed again: a refused run leaves nothing behind).
    An --out that cannot be created or written fails so before any data is read."""
    out = Path(path).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {path}: exists and is not a directory")
    base = next(d for d in (out, *out.parents) if d.exists())
    if not base.is_dir():
        raise ValueError(f"--out {path}: cannot create it ({base} is not a writable directory)")
    try:
        if base == out:
            with tempfile.TemporaryFile(dir=out):
                pass
        else:
            os.rmdir(tempfile.mkdtemp(dir=base, prefix=".mdsd-check-"))
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ValueError(
            f"--out {path}: cannot create or write it ({base} is not a writable directory: {why})"
        ) from None
    return out.resolve()


def debug_parent() -> Parser:
    """``--debug`` for every subparser; SUPPRESS keeps a top-level ``mdsd-fast --debug`` intact."""
    p = Parser(add_help=False)
    p.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback of an error instead of one line",
    )
    return p


def _number(kind: Callable[[str], Any], text: str) -> Any:
    try:
        return kind(text.strip())
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    v = int(_number(int, text))
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def nonnegative_int(text: str) -> int:
    v = int(_number(int, text))
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def finite_float(text: str) -> float:
    v = float(_number(float, text))
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def positive_float(text: str) -> float:
    v = finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def csv_of(kind: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    """A comma-separated list of ``kind``, non-empty, each item at most once."""

    def parse(text: str) -> tuple[Any, ...]:
        items = [x.strip() for x in text.split(",")]
        if not any(items):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        if "" in items:
            raise argparse.ArgumentTypeError(f"empty item in {text!r}")
        out = tuple(kind(x) for x in items)
        for i, v in enumerate(out):
            if v in out[:i]:
                raise argparse.ArgumentTypeError(f"{items[i]!r} given twice in {text!r}")
        return out

    parse.__name__ = f"list of {getattr(kind, '__name__', 'values')}"
    return parse


def run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Run a subcommand under the error contract (module docstring)."""
    debug = bool(getattr(args, "debug", False))
    try:
        return int(func(args))
    except KeyboardInterrupt:
        if debug:
            raise
        hint = " (rerun with --resume to reuse the groups already finished)" if hasattr(args, "resume") else ""
        print(f"{prog}: interrupted{hint}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `mdsd-fast report | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
    except USER_ERRORS as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {describe(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:
        if _broken_pool(exc) and not debug:
            print(
                f"{prog}: error: a worker process died (killed, or out of memory? try fewer --workers)", file=sys.stderr
            )
            return EXIT_USER_ERROR
        traceback.print_exc()
        print(
            f"{prog}: internal error ({type(exc).__name__}): this is a bug in mdsd_fast {__version__}, not in "
            "your input; please report it to the maintainers with the command line and the traceback above",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR


def _broken_pool(exc: BaseException) -> bool:
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(exc, BrokenProcessPool)


def describe(exc: BaseException) -> str:
    """One line for a user error: the message, with an OSError's file and reason."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename and str(exc).startswith("["):
        text = f"{exc.filename}: {exc.strerror}"  # "[Errno 2] No such file ...: 'x'" -> "x: No such file ..."
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())  # one line, whatever the message held
