"""The tree report on both shipped tree samples, side by side (README "Findings on draft trees").

Runs ``tree_report(model=...)`` for SmolLM2-135M and Gemma-3-270M and prints one markdown table:
per (shape, verifier), exact tokens per target call with the 95 % t interval over trees, and per
shape the tree bound's interval, over the layer-skip drafts of both samples. Then each
model's findings, checked tree by tree as ``mdsd-fast trees`` checks them.

    python studies/trees_models.py [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

from mdsd_fast.trees.report import tree_report

MODELS = ("smollm2-135m", "gemma3-270m")
#: the layer-skip drafts of each sample: the Gemma sample ships no bigram trees, so SmolLM2's are left
#: out too for a like-for-like table (--all-drafts keeps them)
SKIP_DRAFTS = {"smollm2-135m": ("skip2", "skip4"), "gemma3-270m": ("skip1", "skip4")}


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    if r["verifier"] == "bound":
        if math.isfinite(r["tokens_per_call"]):
            return f"{r['tokens_per_call']:.3f} (exact)"
        return f"[{r['bound_low']:.3f}, {r['bound_high']:.3f}]"
    if not math.isfinite(r["tokens_per_call"]):
        return f"refused on {r['refused']}"
    lo, hi = max(r["ci_low"], 1.0), min(r["ci_high"], r["depth"] + 1.0)
    return f"{r['tokens_per_call']:.3f} ({lo:.2f}–{hi:.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None, help="write both reports' records and findings here")
    ap.add_argument("--all-drafts", action="store_true", help="every draft of each sample (SmolLM2: + ngram2)")
    args = ap.parse_args()
    reps = {}
    for m in MODELS:
        t0 = time.perf_counter()
        reps[m] = tree_report(model=m, threads=args.threads, drafts=None if args.all_drafts else SKIP_DRAFTS[m])
        print(f"{m}: {reps[m].metadata['trees']} trees, {time.perf_counter() - t0:.1f} s")
    rows: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for m, rep in reps.items():
        for r in rep.records:
            rows.setdefault((r["shape"], r["verifier"]), {})[m] = r
    print("\n| shape | verifier | SmolLM2-135M tok/call (95% CI) | Gemma-3-270M tok/call (95% CI) |")
    print("|---|---|---|---|")
    for (shape, ver), by in rows.items():
        print(f"| {shape} | {ver} | {_cell(by.get(MODELS[0]))} | {_cell(by.get(MODELS[1]))} |")
    for m, rep in reps.items():
        print(f"\nFindings, {m}:\n\n{rep.findings_markdown()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({m: json.loads(rep.to_json()) for m, rep in reps.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
