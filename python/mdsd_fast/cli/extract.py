"""The ``extract`` subcommand (``mdsd-fast extract``): its arguments, the ``--draft`` specs
(checked before any model loads) and the command, over :mod:`mdsd_fast.lm`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._torch import torch_module
from ..data import default_dataset_path
from ..extract import distributions as lm
from ..extract.drafts import LayerSkipDraft, ModelDraft, ngram_draft_from_text
from ..extract.presets import build_default_dataset
from ..extract.trees import build_tree_dataset
from ..trees.data import default_trees_path
from ..trees.shapes import SHAPES

_DRAFT_FORMS = "NAME=layerskip:I,J,... | NAME=model:PATH | NAME=ngram:ORDER:CORPUS.txt"


def _split_draft(spec: str) -> tuple[str, str, Any]:
    """(name, kind, argument) of a ``--draft`` spec, checked before any model is loaded."""
    name, _, rest = spec.partition("=")
    if not rest:
        name, rest = "", spec
    kind, _, arg = rest.partition(":")
    try:
        if kind == "layerskip":
            layers = [int(x) if x.strip().isdigit() else -1 for x in arg.split(",")]  # "", "-3", "1,,2" refused
            if any(i < 0 for i in layers):
                raise ValueError(f"--draft {spec}: layerskip takes 0-based layer indices I,J,... (integers >= 0)")
            return name, kind, layers
        if kind == "model" and arg:
            return name, kind, arg
        if kind == "ngram":
            order_s, _, corpus = arg.partition(":")
            if not corpus or int(order_s) < 1:
                raise ValueError(order_s)
            if not os.path.isfile(corpus):
                raise FileNotFoundError(f"--draft {spec}: no such corpus file {corpus!r}")
            return name, kind, (int(order_s), corpus)
    except ValueError as exc:
        if str(exc).startswith("--draft "):
            raise
    raise ValueError(f"--draft: expected {_DRAFT_FORMS}, got {spec!r}")


def _parse_draft(spec: str, model: Any, tok: Any) -> tuple[str, Any]:
    """``name=layerskip:13,20`` | ``name=model:PATH`` | ``name=ngram:ORDER:CORPUS.txt``."""
    name, kind, arg = _split_draft(spec)
    if kind == "layerskip":
        d: Any = LayerSkipDraft(model, arg, name or None)
    elif kind == "model":
        m, _ = lm.load_model(arg)
        d = ModelDraft(m, name or "model")
    else:
        order, corpus = arg
        d = ngram_draft_from_text(
            tok,
            Path(corpus).read_text(encoding="utf-8"),
            int(model.config.vocab_size),
            order,
            name=name or None,
            corpus=Path(corpus).name,
        )
    return (name or d.name), d


def _cmd_extract(args: argparse.Namespace) -> int:
    t0 = time.time()
    if args.default_dataset or args.model:
        model = args.model or "smollm2-135m"
        if args.full and not args.out:
            raise ValueError("--full: give --out FILE (the full rows are not shipped)")
        out = Path(args.out) if args.out else default_dataset_path(model)
        ds = build_default_dataset(out, threads=args.threads, progress=not args.quiet, model=model, full=args.full)
    else:
        if not args.target or not args.draft or not args.out:
            raise ValueError("give --default-dataset, or --target, at least one --draft and --out")
        for spec in args.draft:  # a typo fails now, not after the target model has loaded
            _split_draft(spec)
        if args.prompts is not None and not os.path.isfile(args.prompts):
            raise FileNotFoundError(f"--prompts: no such file {args.prompts!r}")
        from ..extract.presets import PRESETS, preset

        named = args.target == "smollm2" or args.target in PRESETS
        if not named and not os.path.exists(args.target):
            raise FileNotFoundError(f"--target: no such model directory or file {args.target!r}")
        torch = torch_module()
        torch.set_num_threads(args.threads)
        if named:
            model, tok = preset(args.target).load()
        else:
            model, tok = lm.load_model(args.target, args.gguf_file)
        drafts = dict(_parse_draft(s, model, tok) for s in args.draft)
        prompts = lm.load_prompts(args.prompts)
        out = Path(args.out)
        ds = lm.extract(
            model,
            drafts,
            prompts,
            args.temperatures,
            tokenizer=tok,
            max_new_tokens=args.max_new_tokens,
            record_every=args.record_every,
            seed=args.seed,
            chat_template=not args.no_chat_template,
            progress=not args.quiet,
            info={"command": " ".join(["mdsd-fast", *sys.argv[1:]])},
        )
        ds.save(out)
    sm = ds.sum_min()
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {len(ds)} rows, V = {ds.vocab_size}, {time.time() - t0:.0f} s")
    for d in ds.drafts:
        for T in ds.temperatures:
            m = (ds.column("draft") == d) & np.isclose(ds.column("temperature"), T)
            print(f"  draft {d:>8}  T = {T:.1f}: {int(m.sum())} rows, mean sum min(p, q) = {sm[m].mean():.4f}")
    return 0


def _model_choice(value: str) -> str:
    from ..extract.presets import preset

    try:
        return preset(value).name
    except ValueError as exc:  # argparse names the option; the message says what it takes
        raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None


def add_extract_parser(sub: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Register the ``extract`` subcommand on an argparse subparsers object."""
    from .args import nonnegative_int, positive_float, positive_int

    ap = sub.add_parser(
        "extract",
        parents=list(parents),
        help="record target/draft next-token distributions from language models",
        description="Record real next-token distributions (target p, draft q) from causal language models "
        "into a dataset file (.npz) that `mdsd-fast report --dataset` reads. Needs torch and transformers "
        "(the models extra: pip install '.[models]' in a clone of the repository). --default-dataset "
        "rebuilds the shipped SmolLM2-135M dataset, offline (docs/guide/data.md).",
    )
    ap.add_argument(
        "--default-dataset",
        action="store_true",
        help="rebuild the shipped dataset (SmolLM2-135M, layer-skip drafts) into the package (or --out)",
    )
    ap.add_argument(
        "--model",
        type=_model_choice,
        help="rebuild the shipped data of this model into the package (or --out): smollm2-135m (the same as "
        "--default-dataset) or gemma3-270m (a sparse sample, docs/guide/data.md)",
    )
    ap.add_argument("--full", action="store_true", help="with --model: keep every row to 1 - 1e-6 (needs --out)")
    ap.add_argument("--target", help="local model directory, a .gguf file, 'smollm2' or 'gemma3-270m'")
    ap.add_argument("--gguf-file", help="GGUF file name inside --target")
    ap.add_argument(
        "--draft",
        action="append",
        default=[],
        help="NAME=layerskip:I,J,... | NAME=model:PATH | NAME=ngram:ORDER:CORPUS.txt (repeatable)",
    )
    ap.add_argument("--prompts", help="JSON-lines prompts (id, domain, text); default: the shipped prompts")
    ap.add_argument(
        "--temperatures",
        type=positive_float,
        nargs="+",
        default=list(lm.DEFAULT_TEMPERATURES),
        help=f"sampling temperatures (default {' '.join(f'{t:g}' for t in lm.DEFAULT_TEMPERATURES)})",
    )
    ap.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=lm.DEFAULT_MAX_NEW_TOKENS,
        help=f"tokens generated per prompt (default {lm.DEFAULT_MAX_NEW_TOKENS})",
    )
    ap.add_argument("--record-every", type=positive_int, default=1, help="record every k-th generated position")
    ap.add_argument(
        "--seed", type=nonnegative_int, default=lm.DEFAULT_SEED, help=f"sampling seed (default {lm.DEFAULT_SEED})"
    )
    ap.add_argument("--no-chat-template", action="store_true", help="feed the prompts as plain text")
    ap.add_argument(
        "--threads", type=positive_int, default=1, help="torch threads (default 1: fastest on small machines)"
    )
    ap.add_argument("--out", help="output .npz file")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.set_defaults(func=_cmd_extract)


def _cmd_extract_trees(args: argparse.Namespace) -> int:
    t0 = time.time()
    out = Path(args.out) if args.out else (default_trees_path(args.model) if args.sample else None)
    if out is None:
        raise ValueError("--out: give an output file (only the --sample goes into the package by default)")
    # No torch, no model package, a bad path: ImportError / OSError / ValueError, one line (cli.run).
    b = build_tree_dataset(out, sample=args.sample, threads=args.threads, shapes=args.shape, progress=not args.quiet,
                           model=args.model)  # fmt: skip
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {len(b)} trees, {time.time() - t0:.0f} s")
    return 0


def add_extract_trees_parser(sub: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Register the ``extract-trees`` subcommand on an argparse subparsers object."""
    ap = sub.add_parser(
        "extract-trees",
        help="grow draft trees from a real model",
        description="Grow draft trees from a real model and record the target and draft distributions at "
        "every node into a tree file (.npz) that `mdsd-fast trees --data` reads. Needs torch and "
        "transformers (the models extra: pip install '.[models]' in a clone of the repository). --sample "
        "rebuilds the shipped sample (docs/guide/trees.md).",
        parents=list(parents),
    )
    ap.add_argument("--sample", action="store_true", help="the shipped sample (written into the package by default)")
    ap.add_argument("--model", type=_model_choice, default="smollm2-135m",
                    help="smollm2-135m (default) or gemma3-270m (a preset of mdsd_fast.extract.presets)")  # fmt: skip
    ap.add_argument("--shape", action="append", choices=list(SHAPES), help="only these shapes (repeatable)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--out", help="output .npz file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.set_defaults(func=_cmd_extract_trees)
