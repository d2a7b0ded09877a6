"""``mdsd-fast convert``: a log of OpenAI-style JSONL pairs or of a dataset, written in the sharded
log format (:mod:`mdsd_fast.logs.convert` does the work)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..logs.convert import from_dataset, from_openai_jsonl


def add_convert_parser(sub: Any, parents: list[Any]) -> None:
    """``mdsd-fast convert openai TARGET DRAFT --out DIR --vocab-size V`` and ``convert dataset [FILE]``."""
    from ..cli.args import finite_float, positive_int

    cp = sub.add_parser(
        "convert",
        parents=parents,
        help="convert logs (OpenAI-style JSONL pairs, the flat dataset) into the sharded log format",
        description="Writes a log directory (manifest.json + Parquet shards; docs/guide/logs.md) that "
        "`mdsd-fast report --dataset DIR` streams. Needs pyarrow (pip install 'mdsd_fast[logs]').",
    )
    kinds = cp.add_subparsers(dest="kind", metavar="{openai,dataset}", required=True, parser_class=type(cp))
    oa = kinds.add_parser("openai", parents=parents, help="a target and a draft JSONL file scored on the same text")
    oa.add_argument("target", help="JSONL of the target model's responses (choices[].logprobs.content)")
    oa.add_argument("draft", help="JSONL of the draft model scoring the same texts, line by line")
    oa.add_argument("--vocab-size", type=positive_int, required=True, help="the models' vocabulary size")
    oa.add_argument("--model", default=None, help="target model name (default: the file's 'model' field)")
    oa.add_argument("--draft-name", default=None, help="draft name (default: the draft file's 'model' field)")
    oa.add_argument("--temperature", type=finite_float, default=math.nan, help="sampling temperature to record")
    oa.add_argument("--domain", default="", help="domain to record (default empty)")
    ds = kinds.add_parser("dataset", parents=parents, help="a flat dataset file (default: the shipped SmolLM2 data)")
    ds.add_argument("file", nargs="?", default=None, help="an .npz dataset file (default: the shipped one)")
    ds.add_argument("--model", default=None, help="target model name (default: the dataset's info)")
    for p in (oa, ds):
        p.add_argument("--out", required=True, help="the log directory to create (must not hold a log)")
        p.add_argument("--rows-per-shard", type=positive_int, default=100_000, help="rows per shard (default 100000)")
        p.add_argument(
            "--resume",
            action="store_true",
            help="continue an interrupted conversion into --out (give the same input and options)",
        )
    cp.set_defaults(func=_convert)


def _convert(args: argparse.Namespace) -> int:
    import time

    t0 = time.perf_counter()
    if args.kind == "openai":
        out = from_openai_jsonl(
            args.target,
            args.draft,
            args.out,
            vocab_size=args.vocab_size,
            model=args.model,
            draft_name=args.draft_name,
            temperature=args.temperature,
            domain=args.domain,
            rows_per_shard=args.rows_per_shard,
            resume=args.resume,
        )
    else:
        out = from_dataset(
            args.file, args.out, model=args.model, rows_per_shard=args.rows_per_shard, resume=args.resume
        )
    from ..logs.reader import open_logs

    logs = open_logs(out)
    print(f"{out}: {len(logs)} rows in {len(logs.shards)} shards ({time.perf_counter() - t0:.1f} s)")
    return 0
